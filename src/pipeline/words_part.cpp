#include "pipeline/words_part.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/text_relevance.hpp"
#include "files/file_io.hpp"
#include "pipeline/predictions.hpp"

namespace vitattn::pipeline {

namespace {
constexpr const char* kWordsHeader = "text_index,position,token,relevance";
}  // namespace

WordsRequest text_words(const TextTower& tower, const std::vector<std::vector<std::int32_t>>& ids,
                        const std::vector<std::vector<std::string>>& tokens, int start_layer) {
  if (ids.size() != tokens.size())
    throw Error(fmt::format("{} texts' ids but {} texts' tokens", ids.size(), tokens.size()));
  WordsRequest words;
  words.tower = &tower;
  words.start_layer = start_layer;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const auto [begin, end] = word_span(tower, ids[t]);
    if (static_cast<int>(tokens[t].size()) != std::max(end - begin, 0))
      throw Error(fmt::format("text {}: {} token texts for {} words", t, tokens[t].size(), std::max(end - begin, 0)));
    TextWords& text = words.texts.emplace_back(TextWords{ids[t], tokens[t], {}});
    encode_text(tower, text.ids, false, &text.tape);
  }
  return words;
}

std::string words_csv(const WordsRequest& words, const RowVector& image_embedding) {
  std::string csv = std::string(kWordsHeader) + "\n";
  for (std::size_t t = 0; t < words.texts.size(); ++t) {
    const TextWords& text = words.texts[t];
    const RowVector relevance = word_relevance(*words.tower, text.ids, text.tape, image_embedding, words.start_layer);
    const int begin = word_span(*words.tower, text.ids).first;
    for (Eigen::Index j = 0; j < relevance.size(); ++j)
      csv += fmt::format("{},{},{},{:.9g}\n", t, begin + j, csv_field(text.tokens[static_cast<std::size_t>(j)]),
                         relevance(j));
  }
  return csv;
}

void write_words_part(const std::filesystem::path& part, const WordsRequest& words, const RowVector& image_embedding) {
  const std::string csv = words_csv(words, image_embedding);
  files::write_file_atomic(part, csv.data(), csv.size());
}

}  // namespace vitattn::pipeline
