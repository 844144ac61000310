#include "download_name.hpp"

#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <string_view>

#include "pipeline/job_outputs.hpp"

namespace vitattn::serve {
namespace {

// The code point that starts at text[i] and its length in bytes; no value (and length 1) where
// the bytes are not UTF-8: a stray continuation byte, a sequence cut short, an overlong form, a
// surrogate, past U+10FFFF.
struct CodePoint {
  std::optional<char32_t> value;
  std::size_t size = 1;
};

CodePoint code_point_at(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  // The sequence's length from its lead byte, the lead's value bits, the least value it may hold.
  const std::size_t n = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0) return {};
  char32_t value = lead & (0x7Fu >> n);
  const char32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (i + n > text.size()) return {};
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    value = (value << 6) | (byte(i + k) & 0x3Fu);
  }
  if (value < least || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return {};
  return {value, n};
}

// Control characters (C0, DEL, C1), the bidirectional controls (they can show a name reversed)
// and the path separators.
bool unfit_for_file_name(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == '/' || c == '\\' || c == 0x061C || c == 0x200E || c == 0x200F ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

bool kept_ascii(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// The Latin letter of U+00C0…U+017F without its marks (the base letter of its Unicode
// decomposition; Æ, Ø, Þ, ß, Đ, Ł, Œ… by their usual spelling); null for ×, ÷ and the rest.
const char* latin_letter(char32_t c) {
  static constexpr const char* kLetters[] = {
      "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I", "I",  // U+00C0
      "D", "N", "O", "O", "O", "O", "O", "",  "O", "U", "U", "U", "U", "Y", "TH", "ss", // U+00D0
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",  // U+00E0
      "d", "n", "o", "o", "o", "o", "o", "",  "o", "u", "u", "u", "u", "y", "th", "y",  // U+00F0
      "A", "a", "A", "a", "A", "a", "C", "c", "C", "c", "C", "c", "C", "c", "D", "d",   // U+0100
      "D", "d", "E", "e", "E", "e", "E", "e", "E", "e", "E", "e", "G", "g", "G", "g",   // U+0110
      "G", "g", "G", "g", "H", "h", "H", "h", "I", "i", "I", "i", "I", "i", "I", "i",   // U+0120
      "I", "i", "IJ", "ij", "J", "j", "K", "k", "k", "L", "l", "L", "l", "L", "l", "L", // U+0130
      "l", "L", "l", "N", "n", "N", "n", "N", "n", "n", "N", "n", "O", "o", "O", "o",   // U+0140
      "O", "o", "OE", "oe", "R", "r", "R", "r", "R", "r", "S", "s", "S", "s", "S", "s", // U+0150
      "S", "s", "T", "t", "T", "t", "T", "t", "U", "u", "U", "u", "U", "u", "U", "u",   // U+0160
      "U", "u", "U", "u", "W", "w", "Y", "y", "Y", "Z", "z", "Z", "z", "Z", "z", "s",   // U+0170
  };
  static_assert(std::size(kLetters) == 0x180 - 0xC0);
  if (c < 0xC0 || c >= 0x180 || *kLetters[c - 0xC0] == '\0') return nullptr;
  return kLetters[c - 0xC0];
}

// RFC 5987's value-chars: the attr-chars as they are, every other byte as %XX.
std::string percent_encoded(std::string_view bytes) {
  static constexpr std::string_view kMarks = "!#$&+-.^_`|~";
  std::string out;
  for (const char c : bytes) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || kMarks.find(c) != std::string_view::npos) out += c;
    else out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

// `text` spelled again code point by code point: `spell(out, c, bytes)` appends what the code
// point c (its UTF-8 `bytes`) becomes, and each byte that starts no code point becomes '_'.
template <class Spell>
std::string respelled(std::string_view text, Spell spell) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const CodePoint c = code_point_at(text, i);
    if (c.value) spell(out, *c.value, text.substr(i, c.size));
    else out += '_';
    i += c.size;
  }
  return out;
}

}  // namespace

std::string report_file_name(const std::string& name) {
  const std::size_t dot = name.rfind('.');
  const std::string_view stem = std::string_view(name).substr(0, dot == std::string::npos || dot == 0 ? name.size() : dot);
  return respelled(stem, [](std::string& out, char32_t c, std::string_view bytes) {
           if (unfit_for_file_name(c)) out += '_';
           else out += bytes;
         }) +
         pipeline::report_suffix();
}

std::string ascii_file_name(const std::string& file_name) {
  return respelled(file_name, [](std::string& out, char32_t c, std::string_view) {
    if (c < 0x80 && kept_ascii(static_cast<char>(c))) out += static_cast<char>(c);
    else if (c >= 0x300 && c <= 0x36F) return;  // a combining mark: its letter is already there
    else if (const char* latin = latin_letter(c)) out += latin;
    else out += '_';
  });
}

std::string report_disposition(const std::string& name) {
  const std::string file_name = report_file_name(name);
  return fmt::format("attachment; filename=\"{}\"; filename*=UTF-8''{}", ascii_file_name(file_name),
                     percent_encoded(file_name));
}

}  // namespace vitattn::serve
