#include "text/clip_tokenizer.hpp"

#include <limits>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "text/clip_hf_vocabulary.hpp"
#include "text/clip_text_clean.hpp"
#include "text/clip_word_split.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::text {

namespace {

constexpr size_t kShownCharacters = 40;

// "text \"a photo of …\"": how an error names a text, its first characters, on one line (a
// newline or other control character among them is shown as \xNN).
std::string named_text(std::string_view utf8) {
  std::u32string shown;
  try {
    shown = decode_utf8(utf8, "text");
  } catch (const Error&) {
    return "text";
  }
  const bool cut = shown.size() > kShownCharacters;
  if (cut) shown.resize(kShownCharacters);
  return "text \"" + files::printable(encode_utf8(shown)) + (cut ? "…" : "") + "\"";
}

// The lowest-ranked adjacent pair of `word`: its index, or npos when no pair has a rank.
size_t best_pair(const std::vector<int32_t>& word, const ClipVocabulary& v, ClipMerge& merge) {
  size_t best = std::string::npos;
  int32_t best_rank = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i + 1 < word.size(); ++i) {
    const auto it = v.merges.find(pair_key(word[i], word[i + 1]));
    if (it != v.merges.end() && it->second.rank < best_rank) {
      best_rank = it->second.rank;
      best = i;
      merge = it->second;
    }
  }
  return best;
}

// Every occurrence of (first, second), left to right without overlap, replaced by `merged`.
std::vector<int32_t> merge_all(const std::vector<int32_t>& word, int32_t first, int32_t second, int32_t merged) {
  std::vector<int32_t> out;
  out.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
      out.push_back(merged);
      i += 2;
    } else {
      out.push_back(word[i++]);
    }
  }
  return out;
}

}  // namespace

ClipTokenizer::ClipTokenizer() : ClipTokenizer(clip_vocabulary()) {}

ClipTokenizer::ClipTokenizer(const ClipVocabulary& vocabulary) : vocabulary_(vocabulary) {}

ClipTokenizer::ClipTokenizer(std::shared_ptr<const ClipVocabulary> vocabulary)
    : owned_(std::move(vocabulary)), vocabulary_(*owned_) {}

ClipTokenizer ClipTokenizer::from_folder(const std::filesystem::path& folder) {
  return ClipTokenizer(std::make_shared<const ClipVocabulary>(read_clip_hf_vocabulary(folder)));
}

std::vector<int32_t> ClipTokenizer::byte_pair_encode(const std::string& word_bytes) const {
  if (word_bytes == "<|startoftext|>") return {kClipStartOfText};
  if (word_bytes == "<|endoftext|>") return {kClipEndOfText};
  constexpr int32_t kEndOfWordOffset = 256;  // a byte character's id → its '</w>' form's
  std::vector<int32_t> word;
  word.reserve(word_bytes.size());
  for (char b : word_bytes) word.push_back(vocabulary_.byte_id[static_cast<unsigned char>(b)]);
  word.back() += kEndOfWordOffset;
  while (word.size() > 1) {
    ClipMerge merge{};
    const size_t at = best_pair(word, vocabulary_, merge);
    if (at == std::string::npos) break;
    word = merge_all(word, word[at], word[at + 1], merge.merged);
  }
  return word;
}

std::size_t ClipTokenizer::cached_words() const {
  const std::lock_guard lock(cache_mutex_);
  return cache_.size();
}

std::vector<int32_t> ClipTokenizer::word_ids(const std::string& word_bytes) const {
  const std::lock_guard lock(cache_mutex_);
  auto it = cache_.find(word_bytes);
  if (it != cache_.end()) return it->second;
  // Bounded, so that a long-lived tokeniser (a server's, fed any text) does not grow without
  // end: when full it starts again. The ids do not depend on it, only the time does.
  if (cache_.size() >= kCachedWords) cache_.clear();
  return cache_.emplace(word_bytes, byte_pair_encode(word_bytes)).first->second;  // a copy: the cache may be cleared
}

std::vector<int32_t> ClipTokenizer::encode(std::string_view text) const {
  const std::u32string cleaned = clip_clean(decode_utf8(text, named_text(text)));
  std::vector<int32_t> ids;
  for (std::u32string_view word : clip_words(cleaned)) {
    const std::vector<int32_t> piece = word_ids(encode_utf8(word));
    ids.insert(ids.end(), piece.begin(), piece.end());
  }
  return ids;
}

std::vector<int32_t> ClipTokenizer::tokenize(std::string_view text, int context, bool truncate) const {
  if (context < 2) throw Error("CLIP context " + std::to_string(context) + ": it must hold the start and end marks (2 or more)");
  std::vector<int32_t> ids{kClipStartOfText};
  const auto body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  ids.push_back(kClipEndOfText);
  const auto limit = static_cast<size_t>(context);
  if (ids.size() > limit) {
    if (!truncate)
      throw Error(named_text(text) + ": " + std::to_string(ids.size()) + " tokens with the start and end marks, over CLIP's context of " +
                  std::to_string(context));
    ids.resize(limit);
    ids.back() = kClipEndOfText;
  }
  ids.resize(limit, 0);
  return ids;
}

}  // namespace vitattn::text
