#include "text/clip_tokenizer.hpp"

#include <algorithm>
#include <array>
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

// How many bytes the UTF-8 sequence led by `lead` has (0: not a lead byte), and the range its
// second byte must lie in (RFC 3629's table: no overlong form, no surrogate, nothing past U+10FFFF).
int utf8_length(unsigned char lead, unsigned char& low, unsigned char& high) {
  low = 0x80;
  high = 0xBF;
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead < 0xF0) return 3;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  return lead < 0xF5 ? 4 : 0;
}

// `bytes` as UTF-8, each invalid part (a byte that leads nothing, or the longest start of a
// sequence that is cut short) made one U+FFFD: Python's bytes.decode("utf-8", errors="replace").
std::string utf8_replacing_invalid(const std::string& bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    unsigned char low = 0, high = 0;
    const int length = utf8_length(static_cast<unsigned char>(bytes[i]), low, high);
    std::size_t valid = 1;  // the bytes of the sequence seen valid so far, the lead's included
    while (length > 1 && valid < static_cast<std::size_t>(length) && i + valid < bytes.size()) {
      const auto b = static_cast<unsigned char>(bytes[i + valid]);
      if (b < (valid == 1 ? low : 0x80) || b > (valid == 1 ? high : 0xBF)) break;
      ++valid;
    }
    if (length > 0 && valid == static_cast<std::size_t>(length)) out.append(bytes, i, valid);
    else out += kReplacement;
    i += valid;
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

std::string ClipTokenizer::token_text(int32_t id) const {
  std::call_once(symbols_once_, [this] {
    symbols_.resize(static_cast<std::size_t>(kClipVocabularySize));
    for (const auto& [symbol, symbol_id] : vocabulary_.id_of)
      if (symbol_id >= 0 && symbol_id < kClipVocabularySize) symbols_[static_cast<std::size_t>(symbol_id)] = symbol;
  });
  if (id < 0 || id >= kClipVocabularySize || symbols_[static_cast<std::size_t>(id)].empty())
    throw Error("token id " + std::to_string(id) + " is not one of CLIP's vocabulary");
  static constexpr std::string_view kEndOfWord = "</w>";
  std::u32string symbol = decode_utf8(symbols_[static_cast<std::size_t>(id)], "CLIP's vocabulary");
  const bool word_end = symbol.size() >= kEndOfWord.size() &&
                        encode_utf8(symbol.substr(symbol.size() - kEndOfWord.size())) == kEndOfWord;
  if (word_end) symbol.resize(symbol.size() - kEndOfWord.size());
  const std::array<char32_t, 256> characters = clip_byte_characters();
  std::string bytes;
  for (const char32_t c : symbol) {
    const auto* at = std::find(characters.begin(), characters.end(), c);
    if (at == characters.end()) throw Error("token id " + std::to_string(id) + ": its symbol is not byte characters");
    bytes.push_back(static_cast<char>(at - characters.begin()));
  }
  return utf8_replacing_invalid(bytes) + (word_end ? " " : "");
}

}  // namespace vitattn::text
