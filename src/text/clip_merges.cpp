#include "text/clip_merges.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "text/unicode_text.hpp"

// The embedded gzip file (clip_merges_data.cpp).
extern "C" const unsigned char vitattn_clip_merges_gz[];
extern "C" const unsigned char vitattn_clip_merges_gz_end[];

namespace vitattn::text {

namespace {

constexpr std::string_view kEmbeddedName = "bpe_simple_vocab_16e6.txt.gz (built in)";
constexpr std::string_view kEndOfWord = "</w>";

// The uncompressed size a gzip member records in its last four bytes (little-endian).
size_t gzip_recorded_size(std::string_view gz) {
  const auto* b = reinterpret_cast<const unsigned char*>(gz.data() + gz.size() - 4);
  return static_cast<size_t>(b[0]) | static_cast<size_t>(b[1]) << 8 | static_cast<size_t>(b[2]) << 16 |
         static_cast<size_t>(b[3]) << 24;
}

std::string gunzip(std::string_view gz, std::string_view source) {
  if (gz.size() < 18) throw Error(std::string(source) + ": not a gzip file (too short)");
  std::string out(gzip_recorded_size(gz), '\0');
  const std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> d(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (!d) throw Error(std::string(source) + ": out of memory for the gzip decompressor");
  size_t written = 0;
  const auto result = libdeflate_gzip_decompress(d.get(), gz.data(), gz.size(), out.data(), out.size(), &written);
  if (result != LIBDEFLATE_SUCCESS || written != out.size())
    throw Error(std::string(source) + ": not a valid gzip file (libdeflate error " + std::to_string(result) + ")");
  return out;
}

std::string utf8_of(char32_t c) {
  std::string s;
  append_utf8(s, c);
  return s;
}

// The symbols of `line` split on spaces (Python's str.split() on these lines).
std::vector<std::string_view> symbols_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < line.size()) {
    const size_t start = line.find_first_not_of(" \t\r", at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(line.find_first_of(" \t\r", start), line.size());
    out.push_back(line.substr(start, end - start));
    at = end;
  }
  return out;
}

}  // namespace

std::array<char32_t, 256> clip_byte_characters() {
  std::array<char32_t, 256> table{};
  char32_t next_unprintable = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next_unprintable++;
  }
  return table;
}

ClipMergeLines clip_merge_lines(std::string_view text, std::string_view source) {
  ClipMergeLines out;
  out.reserve(kClipMerges);
  size_t at = text.find('\n');
  for (int32_t n = 1; n <= kClipMerges; ++n) {
    if (at == std::string_view::npos || at + 1 == text.size())  // no line after, or only the final newline
      throw Error(std::string(source) + ": " + std::to_string(n) + " lines, CLIP reads " + std::to_string(kClipMerges + 1));
    const size_t start = at + 1;
    at = text.find('\n', start);
    const auto line = text.substr(start, (at == std::string_view::npos ? text.size() : at) - start);
    const auto symbols = symbols_of(line);
    if (symbols.size() != 2)
      throw Error(std::string(source) + ": line " + std::to_string(n + 1) + " is not two symbols: \"" + std::string(line) + "\"");
    out.emplace_back(symbols[0], symbols[1]);
  }
  return out;
}

std::function<std::string(size_t)> clip_merges_file_lines(std::string_view source) {
  return [source = std::string(source)](size_t index) { return source + ": line " + std::to_string(index + 2); };
}

void add_clip_merges(ClipVocabulary& v, const ClipMergeLines& lines, const std::function<std::string(size_t)>& where) {
  const auto id_in_vocabulary = [&](const std::string& symbol, size_t r) {
    const auto it = v.id_of.find(symbol);
    if (it == v.id_of.end()) throw Error(where(r) + " names \"" + symbol + "\", which is no symbol of the vocabulary");
    return it->second;
  };
  for (size_t r = 0; r < lines.size(); ++r) {
    const std::string first(lines[r].first), second(lines[r].second);
    const int32_t merged = id_in_vocabulary(first + second, r);
    v.merges.insert_or_assign(pair_key(id_in_vocabulary(first, r), id_in_vocabulary(second, r)),
                              ClipMerge{static_cast<int32_t>(r), merged});
  }
}

ClipVocabulary parse_clip_merges(std::string_view merges_text, std::string_view source) {
  ClipVocabulary v;
  const auto characters = clip_byte_characters();
  // The vocabulary's order: the printable bytes in byte order, then the others.
  std::vector<int> byte_order;
  for (int b = 0; b < 256; ++b)
    if (characters[static_cast<size_t>(b)] == static_cast<char32_t>(b)) byte_order.push_back(b);
  for (int b = 0; b < 256; ++b)
    if (characters[static_cast<size_t>(b)] != static_cast<char32_t>(b)) byte_order.push_back(b);
  std::vector<std::string> symbols;
  symbols.reserve(kClipVocabularySize);
  for (int b : byte_order) symbols.push_back(utf8_of(characters[static_cast<size_t>(b)]));
  for (int i = 0; i < 256; ++i) symbols.push_back(symbols[static_cast<size_t>(i)] + std::string(kEndOfWord));
  const auto lines = clip_merge_lines(merges_text, source);
  for (const auto& [first, second] : lines) symbols.push_back(std::string(first) + std::string(second));
  symbols.emplace_back("<|startoftext|>");
  symbols.emplace_back("<|endoftext|>");
  // dict(zip(vocab, range(len(vocab)))): a repeated symbol keeps its last id.
  for (size_t id = 0; id < symbols.size(); ++id) v.id_of.insert_or_assign(symbols[id], static_cast<int32_t>(id));
  for (size_t i = 0; i < byte_order.size(); ++i)
    v.byte_id[static_cast<size_t>(byte_order[i])] = static_cast<int32_t>(i);
  add_clip_merges(v, lines, clip_merges_file_lines(source));
  return v;
}

const ClipVocabulary& clip_vocabulary() {
  static const ClipVocabulary vocabulary = [] {
    const std::string_view gz(reinterpret_cast<const char*>(vitattn_clip_merges_gz),
                              static_cast<size_t>(vitattn_clip_merges_gz_end - vitattn_clip_merges_gz));
    return parse_clip_merges(gunzip(gz, kEmbeddedName), kEmbeddedName);
  }();
  return vocabulary;
}

}  // namespace vitattn::text
