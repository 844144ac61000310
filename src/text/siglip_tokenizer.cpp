#include "text/siglip_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::text {
namespace {

// HF's SiglipTokenizer defaults, which SigLIP's checkpoints keep.
constexpr std::string_view kEos = "</s>";     // the end token, and the padding
constexpr std::string_view kUnk = "<unk>";    // the prefix of step 4
constexpr std::string_view kUnderline = "\xE2\x96\x81";  // "▁", SentencePiece's space
constexpr std::u32string_view kPunctuation = U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";  // string.punctuation


// At most the first 40 code points of `text`, "…" when cut: a text named in a message.
std::string shortened(std::string_view text) {
  constexpr std::size_t kShown = 40;
  const std::u32string code_points = decode_utf8(text, "text");
  if (code_points.size() <= kShown) return files::printable(text);
  // A control character among them (a newline, a carriage return) shown as \xNN: the error
  // stays one line.
  return files::printable(encode_utf8(std::u32string_view(code_points).substr(0, kShown))) + "\xE2\x80\xA6";
}

// Appending a serialized message to a serialized message merges the two, as protobuf's
// MergeFrom does: this is ModelProto{normalizer_spec (field 3): {add_dummy_prefix (field 3):
// false}}, HF's change to the model before it loads it. Behind step 4's "<unk>" prefix the
// dummy prefix would fall on the prefix, whose pieces are dropped: no difference the oracle
// test could show, kept so that the model is the one HF encodes with.
constexpr std::string_view kNoDummyPrefix{"\x1A\x02\x18\x00", 4};

}  // namespace

std::string lower_case_text(std::string_view text) {
  return encode_utf8(python_lower_each(decode_utf8(text, "text")));
}

std::string canonicalize_text(std::string_view text) {
  std::u32string out;
  bool in_space = false;
  for (const char32_t c : decode_utf8(text, "text")) {
    if (kPunctuation.find(c) != std::u32string_view::npos) continue;  // removed before the spaces are collapsed
    if (is_python_space(c)) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(U' ');
    in_space = false;
    out.push_back(c);
  }
  return encode_utf8(out);
}

std::string siglip_normalized_text(std::string_view text) {
  std::string spaced(kUnderline);
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, kUnderline.size()) == kUnderline) {
      spaced.push_back(' ');
      i += kUnderline.size();
    } else {
      spaced.push_back(text[i++]);
    }
  }
  return canonicalize_text(lower_case_text(spaced));
}

struct SiglipTokenizer::Model {
  sentencepiece::SentencePieceProcessor processor;
  std::size_t unk_pieces = 0;  // how many pieces "<unk>" encodes to: the prefix dropped again
};

SiglipTokenizer::SiglipTokenizer(const std::filesystem::path& spiece_model) : model_(std::make_unique<Model>()) {
  const std::vector<std::uint8_t> bytes = files::read_file(spiece_model);
  std::string serialized(bytes.begin(), bytes.end());
  serialized += kNoDummyPrefix;
  const std::string file = spiece_model.string();
  if (const auto status = model_->processor.LoadFromSerializedProto(serialized); !status.ok())
    throw Error(fmt::format("{}: not a SentencePiece model ({})", file, status.ToString()));
  eos_id_ = model_->processor.PieceToId(kEos);
  if (eos_id_ == model_->processor.unk_id())
    throw Error(fmt::format("{}: the SentencePiece model has no {} piece (SigLIP's end token)", file, kEos));
  std::vector<std::string> pieces;
  if (const auto status = model_->processor.Encode(kUnk, &pieces); !status.ok())
    throw Error(fmt::format("{}: {}", file, status.ToString()));
  model_->unk_pieces = pieces.size();
}

SiglipTokenizer::~SiglipTokenizer() = default;
SiglipTokenizer::SiglipTokenizer(SiglipTokenizer&&) noexcept = default;
SiglipTokenizer& SiglipTokenizer::operator=(SiglipTokenizer&&) noexcept = default;

std::vector<int> SiglipTokenizer::tokenize(std::string_view text, int context, bool truncate) const {
  if (context < 1) throw Error(Subject{"context", std::to_string(context)}, "must be at least 1, for the end token");
  std::vector<std::string> pieces;
  if (const auto status = model_->processor.Encode(std::string(kUnk) + siglip_normalized_text(text), &pieces); !status.ok())
    throw Error(fmt::format("text \"{}\": {}", shortened(text), status.ToString()));
  // HF keeps every piece when there are fewer than the prefix's (it cannot happen: the
  // prefix's own pieces are always there).
  const std::size_t dropped = pieces.size() >= model_->unk_pieces ? model_->unk_pieces : 0;
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(context));
  for (std::size_t i = dropped; i < pieces.size(); ++i) ids.push_back(model_->processor.PieceToId(pieces[i]));
  const auto room = static_cast<std::size_t>(context - 1);
  if (ids.size() > room) {
    if (!truncate)
      throw Error(fmt::format("text \"{}\": {} tokens with the end token, over the context of {}", shortened(text),
                              ids.size() + 1, context));
    ids.resize(room);
  }
  ids.resize(static_cast<std::size_t>(context), eos_id_);  // the end token, then the padding (the same id)
  return ids;
}

std::string SiglipTokenizer::token_text(int id) const {
  if (id < 0 || id >= model_->processor.GetPieceSize())
    throw Error(fmt::format("token id {} is not one of the SentencePiece model's {}", id, model_->processor.GetPieceSize()));
  const std::string piece = model_->processor.IdToPiece(id);
  std::string text;  // built anew: GCC 12 at -O3 warns (-Wrestrict) on std::string::replace here
  std::string_view rest = piece;
  for (std::size_t at = rest.find(kUnderline); at != std::string_view::npos; at = rest.find(kUnderline)) {
    text.append(rest.substr(0, at));
    text.push_back(' ');
    rest.remove_prefix(at + kUnderline.size());
  }
  text.append(rest);
  return text;
}

}  // namespace vitattn::text
