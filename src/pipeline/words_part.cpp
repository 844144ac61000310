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
                        const std::vector<std::vector<std::string>>& tokens, int start_layer,
                        const std::vector<std::vector<std::string>>& view) {
  if (ids.size() != tokens.size() || (!view.empty() && view.size() != ids.size()))
    throw Error(fmt::format("{} texts' ids but {} texts' tokens and {} views", ids.size(), tokens.size(), view.size()));
  WordsRequest words;
  words.tower = &tower;
  words.start_layer = start_layer;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const auto [begin, end] = word_span(tower, ids[t]);
    if (static_cast<int>(tokens[t].size()) != std::max(end - begin, 0))
      throw Error(fmt::format("text {}: {} token texts for {} words", t, tokens[t].size(), std::max(end - begin, 0)));
    if (!view.empty() && static_cast<int>(view[t].size()) != std::min(end + 1, static_cast<int>(ids[t].size())))
      throw Error(fmt::format("text {}: {} view token texts for positions 0…{}", t, view[t].size(), end));
    TextWords& text = words.texts.emplace_back(TextWords{ids[t], tokens[t], view.empty() ? std::vector<std::string>{} : view[t], {}});
    encode_text(tower, text.ids, false, &text.tape);
  }
  return words;
}

std::vector<RowVector> word_relevances(const WordsRequest& words, const RowVector& image_embedding) {
  std::vector<RowVector> out;
  for (const TextWords& text : words.texts)
    out.push_back(word_relevance(*words.tower, text.ids, text.tape, image_embedding, words.start_layer));
  return out;
}

std::string words_csv(const WordsRequest& words, const RowVector& image_embedding) {
  std::string csv = std::string(kWordsHeader) + "\n";
  const std::vector<RowVector> relevances = word_relevances(words, image_embedding);
  for (std::size_t t = 0; t < words.texts.size(); ++t) {
    const TextWords& text = words.texts[t];
    const RowVector& relevance = relevances[t];
    const int begin = word_span(*words.tower, text.ids).first;
    for (Eigen::Index j = 0; j < relevance.size(); ++j)
      csv += fmt::format("{},{},{},{:.9g}\n", t, begin + j, csv_field(text.tokens[static_cast<std::size_t>(j)]),
                         relevance(j));
  }
  return csv;
}

namespace {

// The tape's attention [layer][head] (n, n) cropped to its first `keep` positions, row-major.
std::vector<float> cropped_attention(const ForwardTape& tape, std::size_t keep) {
  std::vector<float> out;
  for (const BlockTape& block : tape.blocks)
    for (const Matrix& a : block.attention) {
      if (static_cast<std::size_t>(a.rows()) < keep || static_cast<std::size_t>(a.cols()) < keep)
        throw Error(fmt::format("the text attention is {}x{}, fewer than its {} view tokens", a.rows(), a.cols(), keep));
      for (std::size_t i = 0; i < keep; ++i)
        for (std::size_t j = 0; j < keep; ++j)
          out.push_back(a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)));
    }
  return out;
}

}  // namespace

report::ReportTexts report_texts(const WordsRequest& words, const std::vector<std::string>& texts,
                                 const std::vector<double>& probabilities, const RowVector& image_embedding) {
  if (texts.size() != words.texts.size() || probabilities.size() != words.texts.size())
    throw Error(fmt::format("report: {} texts, {} names and {} probabilities", words.texts.size(), texts.size(),
                            probabilities.size()));
  const TextTower& tower = *words.tower;
  report::ReportTexts out;
  out.causal = tower.mask == TextMask::causal;
  out.probability = tower.probabilities == ClassProbability::sigmoid ? "sigmoid" : "softmax";
  out.layers = tower.n_layers();
  out.heads = tower.n_heads;
  out.relevance_from = words.start_layer < 0 ? tower.n_layers() - 1 : words.start_layer;
  const std::vector<RowVector> relevances = word_relevances(words, image_embedding);
  for (std::size_t t = 0; t < words.texts.size(); ++t) {
    const TextWords& text = words.texts[t];
    if (text.view.empty()) throw Error(fmt::format("report: text {} has no view tokens", t));
    report::ReportPrompt& p = out.prompts.emplace_back();
    p.text = texts[t];
    p.probability = probabilities[t];
    p.words = text.tokens;
    p.relevance.assign(relevances[t].data(), relevances[t].data() + relevances[t].size());
    p.first_word = word_span(tower, text.ids).first;
    p.tokens = text.view;
    p.attention = cropped_attention(text.tape, text.view.size());
  }
  return out;
}

void write_words_part(const std::filesystem::path& part, const WordsRequest& words, const RowVector& image_embedding) {
  const std::string csv = words_csv(words, image_embedding);
  files::write_file_atomic(part, csv.data(), csv.size());
}

}  // namespace vitattn::pipeline
