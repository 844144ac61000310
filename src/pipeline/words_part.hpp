#pragma once
// <name>_words.csv (the image command's --save-attention with texts): which words of each text
// mattered to the image-text logit of THIS image, the CLIP notebook's R_text
// (core/text_relevance.hpp word_relevance) at the text's pooled row for the image's embedding.
// Images only: a video's frames get none.
//
// The texts' side is the same for every image, so it is made once per run (text_words): each
// text's ids, its words' token texts (the tokeniser's, named by the front end that knows which
// tokeniser the tower reads) and its forward tape. Each image then costs one backward per text.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "core/text_tower.hpp"
#include "core/vit.hpp"
#include "report/report_page.hpp"

namespace vitattn::pipeline {

// One text as words.csv lists it.
struct TextWords {
  std::vector<std::int32_t> ids;    // the tower's row, exactly its context long
  std::vector<std::string> tokens;  // the text of each word position (word_span), in order
  std::vector<std::string> view;    // the text of positions 0 … the end token (the report's text attention view); may be empty
  ForwardTape tape;                 // the text's forward through the tower, for the backward
};

// What every image's words.csv is made from; shared by the jobs (its tapes are read only).
struct WordsRequest {
  const TextTower* tower = nullptr;  // outlives the batch (the front end owns it)
  std::vector<TextWords> texts;      // in the order given; text_index is the position here
  int start_layer = -1;              // the rollout's first text layer (text_start_layer): −1 the last alone
};

// The request for `ids` (one row per text) and `tokens` (each row's word-position texts): each
// text encoded once with its tape. `view`: each row's texts of positions 0 … its word span's end
// (inclusive), for the report; none: no view. Throws Error when a row's token count is not its
// word span's (or its view's count not the span's end + 1).
WordsRequest text_words(const TextTower& tower, const std::vector<std::vector<std::int32_t>>& ids,
                        const std::vector<std::vector<std::string>>& tokens, int start_layer,
                        const std::vector<std::vector<std::string>>& view = {});

// Each text's word relevances (word_relevance at its word span) for the L2-normalised image
// embedding: words.csv's values, and the report's word bars.
std::vector<RowVector> word_relevances(const WordsRequest& words, const RowVector& image_embedding);

// The report's text side: each text (named by `texts`, with `probabilities` in the same order)
// with its word relevances for `image_embedding` and its tower attention cropped to its view's
// positions (the tape's, which is the forward's own). Throws Error when a text has no view.
report::ReportTexts report_texts(const WordsRequest& words, const std::vector<std::string>& texts,
                                 const std::vector<double>& probabilities, const RowVector& image_embedding);

// RFC 4180 CSV, header "text_index,position,token,relevance", then per text (in order) and per
// word position (ascending): the text's index, the position in its ids, the token's text
// (quoted through csv_field when it holds a comma, quote or line break) and its relevance with
// 9 significant digits, for the L2-normalised image embedding `image_embedding`.
std::string words_csv(const WordsRequest& words, const RowVector& image_embedding);

// words_csv written atomically to `part` (temp + rename). Throws Error naming the part.
void write_words_part(const std::filesystem::path& part, const WordsRequest& words, const RowVector& image_embedding);

}  // namespace vitattn::pipeline
