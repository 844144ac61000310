#include "text/html_unescape.hpp"

#include <array>
#include <optional>
#include <string>
#include <utility>

namespace vitattn::text {

namespace {

constexpr char32_t kReplacement = 0xFFFD;
constexpr char32_t kPastUnicode = 0x110000;

// Named references the tokeniser decodes, with ';' where the name needs it.
constexpr std::array<std::pair<std::u32string_view, char32_t>, 19> kNamed = {{
    {U"amp;", U'&'},   {U"amp", U'&'},    {U"AMP;", U'&'},  {U"AMP", U'&'},    {U"lt;", U'<'},
    {U"lt", U'<'},     {U"LT;", U'<'},    {U"LT", U'<'},    {U"gt;", U'>'},    {U"gt", U'>'},
    {U"GT;", U'>'},    {U"GT", U'>'},     {U"quot;", U'"'}, {U"quot", U'"'},   {U"QUOT;", U'"'},
    {U"QUOT", U'"'},   {U"nbsp;", 0xA0},  {U"nbsp", 0xA0},  {U"apos;", U'\''},
}};

// What Python reads 0x80…0x9F as (Windows-1252; the five unassigned stay themselves).
constexpr std::array<char32_t, 32> kWindows1252 = {
    0x20AC, 0x81,   0x201A, 0x192,  0x201E, 0x2026, 0x2020, 0x2021, 0x2C6,  0x2030, 0x160,
    0x2039, 0x152,  0x8D,   0x17D,  0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x2DC,  0x2122, 0x161,  0x203A, 0x153,  0x9D,   0x17E,  0x178};

std::optional<char32_t> named(std::u32string_view name) {
  for (const auto& [key, value] : kNamed)
    if (key == name) return value;
  return std::nullopt;
}

// The code points html.unescape drops (its _invalid_codepoints).
bool forbidden(char32_t n) {
  return (n >= 0x1 && n <= 0x8) || n == 0xB || (n >= 0xE && n <= 0x1F) || (n >= 0x7F && n <= 0x9F) ||
         (n >= 0xFDD0 && n <= 0xFDEF) || (n & 0xFFFE) == 0xFFFE;
}

// The text a numeric reference of value n stands for.
std::u32string numeric_text(char32_t n) {
  if (n == 0) return std::u32string(1, kReplacement);
  if (n == 0x0D) return U"\r";
  if (n >= 0x80 && n <= 0x9F) return std::u32string(1, kWindows1252[n - 0x80]);
  if ((n >= 0xD800 && n <= 0xDFFF) || n >= kPastUnicode) return std::u32string(1, kReplacement);
  if (forbidden(n)) return {};
  return std::u32string(1, n);
}

int digit_value(char32_t c, int base) {
  if (c >= U'0' && c <= U'9') return static_cast<int>(c - U'0');
  if (base == 16 && c >= U'a' && c <= U'f') return static_cast<int>(c - U'a') + 10;
  if (base == 16 && c >= U'A' && c <= U'F') return static_cast<int>(c - U'A') + 10;
  return -1;
}

// A reference starting at text[at] == '&': how many code points it spans and what it stands
// for, or nothing when Python's pattern does not match there.
struct Reference {
  size_t length;
  std::u32string replacement;
};

std::optional<Reference> numeric_reference(std::u32string_view text, size_t at) {
  size_t i = at + 2;  // past "&#"
  int base = 10;
  if (i < text.size() && (text[i] == U'x' || text[i] == U'X')) {
    base = 16;
    ++i;
  }
  const size_t digits_start = i;
  char32_t value = 0;
  for (int d = 0; i < text.size() && (d = digit_value(text[i], base)) >= 0; ++i)
    value = value >= kPastUnicode ? kPastUnicode : value * static_cast<char32_t>(base) + static_cast<char32_t>(d);
  if (i == digits_start) return std::nullopt;
  if (i < text.size() && text[i] == U';') ++i;
  return Reference{i - at, numeric_text(value >= kPastUnicode ? kPastUnicode : value)};
}

bool ends_name(char32_t c) {
  return c == U'\t' || c == U'\n' || c == U'\f' || c == U' ' || c == U'<' || c == U'&' || c == U'#' || c == U';';
}

std::optional<Reference> named_reference(std::u32string_view text, size_t at) {
  constexpr size_t kLongestName = 32;
  size_t i = at + 1;
  while (i < text.size() && i - (at + 1) < kLongestName && !ends_name(text[i])) ++i;
  if (i == at + 1) return std::nullopt;
  if (i < text.size() && text[i] == U';') ++i;
  const std::u32string_view s = text.substr(at + 1, i - (at + 1));
  // Appended rather than joined with operator+, which GCC 12 at -O3 warns about falsely (-Wrestrict).
  std::u32string replacement;
  if (auto c = named(s)) return Reference{i - at, replacement.append(1, *c)};
  for (size_t x = s.size() - 1; x > 1; --x)
    if (auto c = named(s.substr(0, x))) return Reference{i - at, replacement.append(1, *c).append(s.substr(x))};
  return Reference{i - at, replacement.append(1, U'&').append(s)};
}

std::optional<Reference> reference_at(std::u32string_view text, size_t at) {
  if (at + 1 < text.size() && text[at + 1] == U'#') return numeric_reference(text, at);
  return named_reference(text, at);
}

}  // namespace

std::u32string html_unescape(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    if (text[at] == U'&') {
      if (auto ref = reference_at(text, at)) {
        out += ref->replacement;
        at += ref->length;
        continue;
      }
    }
    out.push_back(text[at++]);
  }
  return out;
}

}  // namespace vitattn::text
