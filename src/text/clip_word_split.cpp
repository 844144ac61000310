#include "text/clip_word_split.hpp"

#include <utf8proc.h>

#include <array>

#include "text/unicode_text.hpp"

namespace vitattn::text {

namespace {

// The literal alternatives, in the pattern's order.
constexpr std::array<std::u32string_view, 9> kLiterals = {U"<|startoftext|>", U"<|endoftext|>", U"'s", U"'t", U"'re",
                                                          U"'ve",             U"'m",            U"'ll", U"'d"};

// c's simple case fold, when it is one code point (utf8proc's CASEFOLD option).
char32_t simple_fold(char32_t c) {
  std::array<utf8proc_int32_t, 4> out{};
  int last_boundclass = 0;
  const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), out.data(), static_cast<utf8proc_ssize_t>(out.size()),
                                         UTF8PROC_CASEFOLD, &last_boundclass);
  return n == 1 ? static_cast<char32_t>(out[0]) : c;
}

bool matches_ignoring_case(char32_t c, char32_t literal) {
  return c == literal || simple_fold(c) == simple_fold(literal);
}

size_t literal_length(std::u32string_view text, size_t at) {
  for (std::u32string_view literal : kLiterals) {
    if (text.size() - at < literal.size()) continue;
    size_t i = 0;
    while (i < literal.size() && matches_ignoring_case(text[at + i], literal[i])) ++i;
    if (i == literal.size()) return literal.size();
  }
  return 0;
}

bool is_other(char32_t c) { return !is_white_space(c) && !is_letter(c) && !is_number(c); }

template <typename Class>
size_t run_length(std::u32string_view text, size_t at, Class in_class) {
  size_t i = at;
  while (i < text.size() && in_class(text[i])) ++i;
  return i - at;
}

// The length of the match at `at`, 0 when none (a \s character).
size_t match_length(std::u32string_view text, size_t at) {
  if (size_t n = literal_length(text, at)) return n;
  if (size_t n = run_length(text, at, is_letter)) return n;
  if (is_number(text[at])) return 1;
  return run_length(text, at, is_other);
}

}  // namespace

std::vector<std::u32string_view> clip_words(std::u32string_view cleaned) {
  std::vector<std::u32string_view> words;
  for (size_t at = 0; at < cleaned.size();) {
    const size_t n = match_length(cleaned, at);
    if (n == 0) {
      ++at;
      continue;
    }
    words.push_back(cleaned.substr(at, n));
    at += n;
  }
  return words;
}

}  // namespace vitattn::text
