#pragma once
// SigLIP's text tokenisation, id for id as Hugging Face's SiglipTokenizer does it with its
// defaults (do_lower_case, padding="max_length", max_length 64, eos and pad "</s>"):
//   1. "▁" + the text with every "▁" made a space;
//   2. every code point lower-cased on its own (Python's str.lower of one character; HF
//      lower-cases character by character);
//   3. big_vision's canonicalisation: ASCII punctuation (Python's string.punctuation)
//      removed, each run of whitespace (Python's str.isspace) made one space, both ends
//      stripped;
//   4. encoded by the SentencePiece model with its add_dummy_prefix turned off, behind the
//      piece string "<unk>" whose own pieces are then dropped (HF's way of keeping a leading
//      "▁" without the dummy prefix);
//   5. the pieces' ids, then the id of "</s>", then that same id as padding up to the context.
// Unlike HF, a text is plain text throughout: a special piece's string typed in it ("</s>")
// is not read as that piece but canonicalised like any other characters.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vitattn::text {

// Step 2: each code point of UTF-8 `text` lower-cased alone by Unicode's simple mapping
// (utf8proc's, as CLIP's tokeniser: unicode_text.hpp), U+0130 "İ" as Python makes it ("i" +
// U+0307). Throws Error when `text`
// is not UTF-8.
std::string lower_case_text(std::string_view text);

// Step 3 (big_vision's canonicalize_text without a kept string). Throws Error when `text`
// is not UTF-8.
std::string canonicalize_text(std::string_view text);

// Steps 1–3: the text handed to SentencePiece (after the "<unk>" prefix).
std::string siglip_normalized_text(std::string_view text);

class SiglipTokenizer {
 public:
  // Loads `spiece_model` (a SentencePiece model file, SigLIP's spiece.model). Throws Error
  // "<file>: <reason>" when it is missing, unreadable, not a SentencePiece model, or has no
  // "</s>" piece.
  explicit SiglipTokenizer(const std::filesystem::path& spiece_model);
  ~SiglipTokenizer();
  SiglipTokenizer(SiglipTokenizer&&) noexcept;
  SiglipTokenizer& operator=(SiglipTokenizer&&) noexcept;

  // Exactly `context` ids: the text's, "</s>", padding. A text with more than context - 1
  // pieces is an Error naming the text and its count, unless `truncate`: then its first
  // context - 1 pieces are kept and "</s>" follows (HF's truncation=True). `context` must
  // be at least 1. Thread-safe (const).
  std::vector<int> tokenize(std::string_view text, int context = 64, bool truncate = false) const;

  // One id's text: its SentencePiece piece with every "▁" (the word mark) made a space, so
  // "▁cat" is " cat" and a text's pieces joined read as its normalised text. An id outside the
  // model is an Error naming it. Thread-safe (const).
  std::string token_text(int id) const;

  int eos_id() const { return eos_id_; }  // also the padding, as HF's pad_token "</s>"

 private:
  struct Model;
  std::unique_ptr<Model> model_;
  int eos_id_ = 0;
};

}  // namespace vitattn::text
