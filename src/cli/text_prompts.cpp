#include "text_prompts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "files/content_hash.hpp"
#include "files/file_io.hpp"
#include "pipeline/zero_shot_texts.hpp"
#include "text/class_prompts.hpp"
#include "text/clip_tokenizer.hpp"
#include "text/siglip_tokenizer.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

bool blank(const std::string& text) { return text.find_first_not_of(" \t\n\r\f\v") == std::string::npos; }

// The SigLIP model's tokeniser: its SentencePiece model beside the weights.
text::SiglipTokenizer sentencepiece_tokenizer(const model::OpenedModel& opened) {
  const fs::path spiece = sentencepiece_model_path(opened);
  std::error_code ec;
  if (!fs::is_regular_file(spiece, ec))
    throw Error("the SigLIP model's tokeniser is not there: no " + files::display(spiece) +
                " (looked for beside the weights; an hf: snapshot has it when its repository does)");
  return text::SiglipTokenizer(spiece);
}

// CLIP's tokeniser: <|startoftext|>, the ids, <|endoftext|>, zeros.
TowerTokenizer clip_bpe(int context) {
  auto tokenizer = std::make_shared<const text::ClipTokenizer>();
  return {[tokenizer, context](const std::string& t, bool truncate) { return tokenizer->tokenize(t, context, truncate); },
          text::clip_tokenizer_identity()};
}

// SigLIP's: the SentencePiece model beside the weights; the ids, "</s>", "</s>" as padding.
// Its identity is the model file's bytes: another spiece.model may give other ids.
TowerTokenizer sentencepiece(const model::OpenedModel& opened, int context) {
  auto tokenizer = std::make_shared<const text::SiglipTokenizer>(sentencepiece_tokenizer(opened));
  const std::vector<std::uint8_t> bytes = files::read_file(sentencepiece_model_path(opened));
  files::Digest64 digest;
  digest.add(bytes.data(), bytes.size());
  return {[tokenizer, context](const std::string& t, bool truncate) {
            const std::vector<int> ids = tokenizer->tokenize(t, context, truncate);
            return std::vector<std::int32_t>(ids.begin(), ids.end());
          },
          "spiece:" + digest.hex()};
}

// The file's lines, each checked to be UTF-8 (the error names the file and the line).
std::vector<std::string> text_lines(const std::string& path) {
  const std::vector<std::uint8_t> bytes = files::read_file(path);
  const std::string all(bytes.begin(), bytes.end());
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (int number = 1; start < all.size(); ++number) {
    const std::size_t end = std::min(all.find('\n', start), all.size());
    std::string line = all.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    text::decode_utf8(line, fmt::format("--texts-from {}: line {}", files::display(path), number));
    if (!blank(line)) lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> prompt_texts(const std::vector<std::string>& texts, const std::string& texts_from) {
  std::vector<std::string> all = texts;
  if (texts_from.empty()) return all;
  std::vector<std::string> lines = text_lines(texts_from);
  if (lines.empty()) throw Error(fmt::format("--texts-from {}: no text in the file", files::display(texts_from)));
  all.insert(all.end(), lines.begin(), lines.end());
  return all;
}

namespace {

// Each row's positions [span(row).first, span(row).second) as the tower's tokeniser decodes each
// id alone (word_token_texts' and prompt_token_texts' one decoder).
std::vector<std::vector<std::string>> position_texts(
    const model::OpenedModel& opened, const std::vector<std::vector<std::int32_t>>& rows,
    const std::function<std::pair<int, int>(const std::vector<std::int32_t>&)>& span) {
  std::function<std::string(std::int32_t)> decode;
  std::optional<text::ClipTokenizer> clip;
  std::optional<text::SiglipTokenizer> siglip;
  switch (opened.text.tokenizer) {
    case model::TextTokenizer::clip_bpe:
      clip.emplace();
      decode = [&clip](std::int32_t id) { return clip->token_text(id); };
      break;
    case model::TextTokenizer::sentencepiece:
      siglip.emplace(sentencepiece_tokenizer(opened));
      decode = [&siglip](std::int32_t id) { return siglip->token_text(id); };
      break;
  }
  if (!decode) throw Error("unknown tokeniser");
  std::vector<std::vector<std::string>> texts;
  for (const std::vector<std::int32_t>& ids : rows) {
    const auto [begin, end] = span(ids);
    std::vector<std::string>& tokens = texts.emplace_back();
    for (int j = begin; j < end; ++j) tokens.push_back(decode(ids[static_cast<std::size_t>(j)]));
  }
  return texts;
}

}  // namespace

std::vector<std::vector<std::string>> word_token_texts(const model::OpenedModel& opened,
                                                       const std::vector<std::vector<std::int32_t>>& rows) {
  return position_texts(opened, rows, [&](const std::vector<std::int32_t>& ids) { return word_span(opened.text.tower, ids); });
}

std::vector<std::vector<std::string>> prompt_token_texts(const model::OpenedModel& opened,
                                                         const std::vector<std::vector<std::int32_t>>& rows) {
  return position_texts(opened, rows, [&](const std::vector<std::int32_t>& ids) {
    return std::pair{0, std::min(word_span(opened.text.tower, ids).second + 1, static_cast<int>(ids.size()))};
  });
}

std::vector<std::int32_t> legrad_empty_prompt_ids(const model::OpenedModel& opened, bool wanted) {
  if (!wanted || opened.model.pooling != Pooling::probe) return {};
  return text_id_rows(opened, {pipeline::kLegradEmptyPrompt}, false, "LeGrad's empty prompt").front();
}

void check_embedding_widths(const model::OpenedModel& opened, const std::string& flag, const std::string& model_name) {
  const Eigen::Index image_width = image_embedding_width(opened.model), text_width = opened.text.tower.d_embed();
  if (image_width != text_width)
    throw Error(fmt::format("{}: {}'s image embedding is {} wide and its text embedding {}: no logits between them", flag,
                            model_name, image_width, text_width));
}

void check_text_classes(const std::vector<std::string>& classes) {
  for (const std::string& c : classes)
    if (!c.empty() && c.find_first_not_of("0123456789, ") == std::string::npos)
      throw Error(fmt::format("--class {}: with --text, name a class by its text, not an index", c));
}

fs::path sentencepiece_model_path(const model::OpenedModel& opened) { return opened.file.parent_path() / "spiece.model"; }

std::vector<std::vector<std::int32_t>> text_id_rows(const model::OpenedModel& opened, const std::vector<std::string>& texts,
                                                    bool truncate, const std::string& option) {
  if (texts.empty()) return {};
  const TextTower& tower = opened.text.tower;
  if (!tower.present())
    throw Error(option + ": " +
                (opened.text.missing.empty() ? files::display(opened.file) + " has no text tower" : opened.text.missing));
  for (const std::string& t : texts)
    if (blank(t)) throw Error(option + ": an empty text (nothing to encode)");
  try {
    const TowerTokenizer tokenizer = tower_tokenizer(opened);
    std::vector<std::vector<std::int32_t>> rows;
    for (const std::string& t : texts) rows.push_back(tokenizer.ids(t, truncate));
    return rows;
  } catch (const Error& e) {
    throw Error(option + ": " + e.what());
  }
}

TowerTokenizer tower_tokenizer(const model::OpenedModel& opened) {
  const int context = opened.text.tower.context();
  switch (opened.text.tokenizer) {
    case model::TextTokenizer::clip_bpe:
      return clip_bpe(context);
    case model::TextTokenizer::sentencepiece:
      return sentencepiece(opened, context);
  }
  throw Error("unknown tokeniser");
}

}  // namespace vitattn::cli
