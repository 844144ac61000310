#pragma once
// simple_tokenizer.py's split of cleaned text into words, the pattern (IGNORECASE)
//   <\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
// as re.findall reads it: at each position the first alternative that matches, else the
// position (a \s character) is skipped. Each alternative is a literal or one greedy class, so
// no backtracking is needed. IGNORECASE matters only for the literals, the text being lower
// case already: their letters match any code point whose simple case fold is that letter
// (as "ſ" folds to "s"); its effect on the classes (a mark such as U+0345 whose fold is a
// letter) is not reproduced.
#include <string>
#include <string_view>
#include <vector>

namespace vitattn::text {

std::vector<std::u32string_view> clip_words(std::u32string_view cleaned);

}  // namespace vitattn::text
