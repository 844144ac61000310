// The text tokenisers' fuzz entry point: a user's text (--text, later an upload) through
// CLIP's tokeniser, as clip.tokenize gets it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "targets.hpp"
#include "text/clip_merges.hpp"
#include "text/clip_tokenizer.hpp"

namespace vitattn::fuzz {
namespace {

void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz self-check failed: %s\n", what);
  std::abort();
}

// One tokeniser for the whole run, as the binary keeps one: its word cache is part of what is
// exercised (a word seen before must give the same ids).
const text::ClipTokenizer& tokenizer() {
  static const text::ClipTokenizer t;
  return t;
}

// clip.tokenize's shape: kClipContext ids, <|startoftext|> first, every id in the vocabulary, the
// closing <|endoftext|> followed only by padding zeros. (The text itself may hold "<|endoftext|>"
// and id 0 is "!", so the closing mark is the last one.)
void require_tokenize_shape(const std::vector<int32_t>& ids) {
  require(ids.size() == static_cast<size_t>(text::kClipContext), "tokenize did not return 77 ids");
  require(ids.front() == text::kClipStartOfText, "tokenize's first id is not <|startoftext|>");
  for (int32_t id : ids) require(id >= 0 && id < text::kClipVocabularySize, "tokenize returned an id outside the vocabulary");
  const auto last_end = std::find(ids.rbegin(), ids.rend(), text::kClipEndOfText);
  require(last_end != ids.rend(), "tokenize returned no <|endoftext|>");
  require(std::all_of(ids.rbegin(), last_end, [](int32_t id) { return id == 0; }),
          "tokenize returned something other than zeros after <|endoftext|>");
}

// Errors name the text in one line, as the CLI prints them.
void require_one_line(const Error& e) {
  const std::string msg = e.what();
  require(msg.rfind("text", 0) == 0, "a text's error message does not start with \"text\"");
  require(msg.find('\n') == std::string::npos, "a text's error message spans several lines");
}

}  // namespace

Outcome clip_text_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& t = tokenizer();
  std::vector<int32_t> body;
  try {
    body = t.encode(text);
  } catch (const Error& e) {
    require_one_line(e);
    // Only invalid UTF-8 is refused by encode; tokenize must refuse it too, truncating or not.
    for (bool truncate : {false, true}) {
      try {
        (void)t.tokenize(text, text::kClipContext, truncate);
        require(false, "tokenize accepted a text that encode refused");
      } catch (const Error& again) {
        require_one_line(again);
      }
    }
    return Outcome::refused;
  }
  for (int32_t id : body) require(id >= 0 && id < text::kClipVocabularySize, "encode returned an id outside the vocabulary");
  require(t.encode(text) == body, "encode gave other ids the second time (word cache)");

  const size_t room = static_cast<size_t>(text::kClipContext) - 2;  // the marks take two
  const bool fits = body.size() <= room;
  // With truncate, a valid text always tokenizes.
  std::vector<int32_t> cut;
  try {
    cut = t.tokenize(text, text::kClipContext, true);
  } catch (const Error& e) {
    std::fprintf(stderr, "tokenize with truncate refused: %s\n", e.what());
    require(false, "tokenize with truncate refused a valid text");
  }
  require_tokenize_shape(cut);
  const size_t kept = std::min(body.size(), room);
  require(std::equal(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(kept), cut.begin() + 1),
          "tokenize's ids between the marks are not encode's");
  require(cut[kept + 1] == text::kClipEndOfText, "tokenize's <|endoftext|> is not right after encode's ids");

  std::vector<int32_t> whole;
  try {
    whole = t.tokenize(text, text::kClipContext, false);
  } catch (const Error& e) {
    require_one_line(e);
    require(!fits, "tokenize refused a text whose ids fit the context");
    return Outcome::refused;
  }
  require(fits, "tokenize accepted a text whose ids do not fit the context");
  require(whole == cut, "tokenize with and without truncate differ on a text that fits");
  return Outcome::accepted;
}

}  // namespace vitattn::fuzz
