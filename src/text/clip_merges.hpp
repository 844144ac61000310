#pragma once
// CLIP's vocabulary, built as simple_tokenizer.py's SimpleTokenizer.__init__ builds it from
// bpe_simple_vocab_16e6.txt.gz (data/clip/, embedded into the library at build time and
// gunzipped with libdeflate on first use):
//   ids 0…255    the 256 byte characters (bytes_to_unicode's order: '!'…'~', '¡'…'¬', '®'…'ÿ',
//                then the other bytes mapped to U+0100…),
//   ids 256…511  the same with '</w>' (the end of a word),
//   ids 512…     one per merge, the pair joined: the file's lines 1…48,894 (line 0 is its
//                version header), in file order, which is also each merge's rank,
//   49406, 49407 <|startoftext|> and <|endoftext|>: 49,408 ids.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vitattn::text {

inline constexpr int32_t kClipStartOfText = 49406;
inline constexpr int32_t kClipEndOfText = 49407;
inline constexpr int32_t kClipVocabularySize = 49408;
inline constexpr int32_t kClipMerges = 49152 - 256 - 2;  // the lines simple_tokenizer.py reads

// One merge: the rank of the pair (lower merges first) and the id of the joined symbol.
struct ClipMerge {
  int32_t rank;
  int32_t merged;
};

struct ClipVocabulary {
  std::array<int32_t, 256> byte_id{};                     // byte → the id of its character
  std::unordered_map<std::string, int32_t> id_of;           // symbol (UTF-8) → id
  std::unordered_map<uint64_t, ClipMerge> merges;           // pair_key(first, second) → merge
};

inline uint64_t pair_key(int32_t first, int32_t second) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(first)) << 32) | static_cast<uint32_t>(second);
}

// bytes_to_unicode(): the code point standing for each byte.
std::array<char32_t, 256> clip_byte_characters();

// Lines 1…kClipMerges of a merges text (line 0, a version header, is skipped, as both
// simple_tokenizer.py and Hugging Face's CLIPTokenizer skip it), each split into its two
// symbols; views into `merges_text`. Too few lines, or a line that is not two symbols, is an
// Error naming `source` and the line.
using ClipMergeLines = std::vector<std::pair<std::string_view, std::string_view>>;
ClipMergeLines clip_merge_lines(std::string_view merges_text, std::string_view source);

// The merges of `lines` (rank = index) added to `v`, whose id_of must already hold each merge's
// two symbols and their join: one that lacks any is an Error "<where(index)> names …".
void add_clip_merges(ClipVocabulary& v, const ClipMergeLines& lines, const std::function<std::string(size_t)>& where);

// where() for add_clip_merges on a merges text: "<source>: line <n>" (the file's lines from 1).
std::function<std::string(size_t)> clip_merges_file_lines(std::string_view source);

// The vocabulary of a merges text (the gunzipped file). A line that is not two symbols, or
// names a symbol the vocabulary lacks, or too few lines, is an Error naming `source`.
ClipVocabulary parse_clip_merges(std::string_view merges_text, std::string_view source);

// The embedded file's vocabulary, built on the first call (thread-safe) and kept.
const ClipVocabulary& clip_vocabulary();

}  // namespace vitattn::text
