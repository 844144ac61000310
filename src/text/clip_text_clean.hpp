#pragma once
// The text CLIP's tokeniser splits: simple_tokenizer.py's
// whitespace_clean(basic_clean(text)).lower(), that is
//   1. ftfy.fix_text: NOT reproduced (no mojibake repair, no Unicode normalisation): text is
//      taken as given, so a caption that ftfy would change can tokenise differently;
//   2. html.unescape twice ("&amp;lt;" is "<"), within what html_unescape.hpp decodes;
//   3. strip (Python's str.isspace), then each run of \s (White_Space) one space, strip;
//   4. lower-case as Python's str.lower (unicode_text.hpp).
#include <string>
#include <string_view>

namespace vitattn::text {

std::u32string clip_clean(std::u32string_view text);

}  // namespace vitattn::text
