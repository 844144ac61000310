#include "text_prompts.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "text/clip_tokenizer.hpp"
#include "text/unicode_text.hpp"

namespace vitattn::cli {
namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r\f\v") == std::string::npos; }

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

std::vector<std::vector<std::int32_t>> tokenize_prompts(const model::OpenedModel& opened,
                                                        const std::vector<std::string>& texts, bool truncate,
                                                        const std::string& flag, const std::string& model_name) {
  const TextTower& tower = opened.text.tower;
  if (!tower.present())
    throw Error(flag + ": " + (opened.text.missing.empty() ? model_name + " has no text tower" : opened.text.missing));
  const VitModel& m = opened.model;
  const int d_image = m.w_embed.size() > 0 ? static_cast<int>(m.w_embed.rows()) : m.d_model();
  if (!m.has_image_embedding() || d_image != tower.d_embed())
    throw Error(fmt::format("{}: {}'s image embedding is {} wide and its text embedding {}: no logits between them", flag,
                            model_name, m.has_image_embedding() ? d_image : 0, tower.d_embed()));
  const text::ClipTokenizer tokenizer;
  std::vector<std::vector<std::int32_t>> ids;
  for (const std::string& t : texts) {
    if (t.find_first_not_of(" \t\n\r\f\v") == std::string::npos) throw Error(flag + ": an empty text (nothing to encode)");
    ids.push_back(tokenizer.tokenize(t, tower.context(), truncate));
  }
  return ids;
}

void check_text_classes(const std::vector<std::string>& classes) {
  for (const std::string& c : classes)
    if (!c.empty() && c.find_first_not_of("0123456789, ") == std::string::npos)
      throw Error(fmt::format("--class {}: with --text, name a class by its text, not an index", c));
}

}  // namespace vitattn::cli
