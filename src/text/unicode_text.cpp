#include "text/unicode_text.hpp"

#include <utf8proc.h>

#include <array>
#include <string>

#include "core/error.hpp"

namespace vitattn::text {

namespace {

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_cased(char32_t c) {
  const auto cat = category(c);
  if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return true;
  const auto cp = static_cast<utf8proc_int32_t>(c);
  return utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp;
}

// Word_Break MidLetter, MidNumLet and Single_Quote: apostrophes, full stops, colons and the
// middle dots (Unicode's WordBreakProperty.txt).
constexpr std::array<char32_t, 16> kMidLetterOrQuote = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,  0x5F4,  0x2018,
                                                         0x2019, 0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E};

bool is_case_ignorable(char32_t c) {
  const auto cat = category(c);
  if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
      cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK)
    return true;
  for (char32_t m : kMidLetterOrQuote)
    if (c == m) return true;
  return c == 0xFF1A;  // fullwidth colon (MidLetter)
}

// Unicode's Final_Sigma: a cased letter before position i (case-ignorables skipped) and none
// after it.
bool in_final_sigma_context(std::u32string_view text, size_t i) {
  size_t j = i;
  bool cased_before = false;
  while (j > 0) {
    --j;
    if (is_case_ignorable(text[j])) continue;
    cased_before = is_cased(text[j]);
    break;
  }
  if (!cased_before) return false;
  for (size_t k = i + 1; k < text.size(); ++k) {
    if (is_case_ignorable(text[k])) continue;
    return !is_cased(text[k]);
  }
  return true;
}

}  // namespace

std::u32string decode_utf8(std::string_view utf8, std::string_view what) {
  std::u32string out;
  out.reserve(utf8.size());
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  size_t at = 0;
  while (at < utf8.size()) {
    utf8proc_int32_t c = 0;
    const auto n = utf8proc_iterate(bytes + at, static_cast<utf8proc_ssize_t>(utf8.size() - at), &c);
    if (n <= 0 || c < 0) throw Error(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(at));
    out.push_back(static_cast<char32_t>(c));
    at += static_cast<size_t>(n);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  std::array<utf8proc_uint8_t, 4> buf{};
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf.data());
  out.append(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(n));
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) append_utf8(out, c);
  return out;
}

bool is_letter(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

bool is_number(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_white_space(char32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || c == 0x85) return true;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_python_space(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

namespace {
// Python's only unconditional lower case of more than one code point.
constexpr char32_t kCapitalIWithDot = 0x130;
}  // namespace

std::u32string python_lower_each(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (const char32_t c : text) {
    if (c == kCapitalIWithDot)
      out += U"i\u0307";
    else
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

std::u32string python_lower(std::u32string_view text) {
  constexpr char32_t kCapitalSigma = 0x3A3, kFinalSigma = 0x3C2;
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c == kCapitalIWithDot) {
      out += U"i\u0307";
    } else if (c == kCapitalSigma && in_final_sigma_context(text, i)) {
      out.push_back(kFinalSigma);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  return out;
}

}  // namespace vitattn::text
