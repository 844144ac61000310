#pragma once
// CLIP's text tokeniser: OpenAI's clip/simple_tokenizer.py (SimpleTokenizer.encode) and
// clip.tokenize, over the vocabulary of clip_merges.hpp.
//
// encode(text): the text cleaned (clip_text_clean.hpp: html.unescape twice, whitespace,
// lower-case; ftfy.fix_text is NOT applied), split into words (clip_word_split.hpp), each
// word's UTF-8 bytes mapped to their byte characters and merged by byte-pair encoding: the
// adjacent pair of lowest merge rank merged everywhere (left to right), again until no pair
// has a rank; the last character carries '</w>'. "<|startoftext|>" and "<|endoftext|>" in the
// text are their own ids. Each word's ids are cached (as Python's cache; guarded, so one
// tokeniser serves any threads), up to kCachedWords words, then the cache starts again.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/clip_merges.hpp"

namespace vitattn::text {

inline constexpr int kClipContext = 77;  // CLIP's context length (clip.tokenize's default)

class ClipTokenizer {
 public:
  ClipTokenizer();  // the built-in vocabulary
  explicit ClipTokenizer(const ClipVocabulary& vocabulary);        // kept by reference: it must outlive the tokeniser
  explicit ClipTokenizer(std::shared_ptr<const ClipVocabulary> vocabulary);  // shared; not null

  // The vocabulary of Hugging Face's files in `folder` (clip_hf_vocabulary.hpp: vocab.json +
  // merges.txt, or tokenizer.json), checked to be CLIP's; errors name the file.
  static ClipTokenizer from_folder(const std::filesystem::path& folder);

  // The ids of `text` (UTF-8; invalid UTF-8 is an Error naming the text), without the marks.
  std::vector<int32_t> encode(std::string_view text) const;

  // clip.tokenize for one text: <|startoftext|>, encode(text), <|endoftext|>, then 0 up to
  // `context` ids. A text whose ids with the marks are more than `context` is an Error naming
  // the text (its first 40 characters) and the count, unless `truncate`: then the first
  // `context` ids are kept and the last of them is <|endoftext|>. `context` below 2 is an Error.
  std::vector<int32_t> tokenize(std::string_view text, int context = kClipContext, bool truncate = false) const;

  // One id's text, as simple_tokenizer.py's decode([id]) gives it: the symbol's byte characters
  // back to their bytes, read as UTF-8 (a byte sequence that is not UTF-8, as a token holding
  // part of a character, becomes U+FFFD per invalid part, as Python's errors="replace"), and
  // '</w>' made a trailing space: "photo</w>" is "photo ", so a text's tokens joined read as
  // the text. The marks are "<|startoftext|>" and "<|endoftext|>". An id outside the
  // vocabulary is an Error naming it. Thread-safe (const); the id → symbol table is built on
  // the first call.
  std::string token_text(int32_t id) const;

  // The words a tokeniser keeps the ids of: a text's words repeat within and across prompts
  // (templates), where the cache pays; past this a server's stream of new words would only
  // grow it.
  static constexpr std::size_t kCachedWords = 1 << 16;
  std::size_t cached_words() const;  // at most kCachedWords

 private:
  std::vector<int32_t> word_ids(const std::string& word_bytes) const;
  std::vector<int32_t> byte_pair_encode(const std::string& word_bytes) const;

  std::shared_ptr<const ClipVocabulary> owned_;  // empty for the built-in or a borrowed vocabulary
  const ClipVocabulary& vocabulary_;
  mutable std::once_flag symbols_once_;
  mutable std::vector<std::string> symbols_;  // id → symbol (UTF-8 byte characters), for token_text
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace vitattn::text
