#pragma once
// The classes each image was given (--top): one line per image for the terminal, and each
// image's part of the batch's predictions.csv (file, rank, class index, label, probability),
// <name>_predictions.csv, from which batch_files.hpp gathers predictions.csv.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/class_labels.hpp"
#include "core/classify.hpp"

namespace vitattn::pipeline {

struct ImagePrediction {
  std::filesystem::path input;
  std::vector<ClassScore> top;  // most likely first
};

// One RFC 4180 field: as it is, or quoted ("" for a quote) when it holds a comma, quote or line
// break. Every CSV vitattn writes (predictions.csv, faithfulness.csv, heads.csv) quotes through here.
std::string csv_field(const std::string& text);

// "photo.jpg: cat 81.23%, dog 10.02%, frog 3.10%"
std::string prediction_line(const ImagePrediction& p, const model::ClassLabels& labels);

// RFC 4180 CSV, header "file,rank,class,label,probability" (batch_files()), one row per
// (image, rank), images in the order given; a field with a comma, quote or line break is quoted.
std::string predictions_csv(const std::vector<ImagePrediction>& predictions, const model::ClassLabels& labels);

// A video's classes, frame by frame (--top): `frame` is the frame's number in the source video.
struct FramePrediction {
  std::int64_t frame = 0;
  std::vector<ClassScore> top;  // most likely first
};

// A video's <name>_predictions.csv: RFC 4180 CSV, header "file,frame,rank,class,label,probability",
// one row per (drawn frame, rank), frames in order; the other fields as predictions_csv's.
std::string frame_predictions_csv(const std::filesystem::path& input, const std::vector<FramePrediction>& frames,
                                  const model::ClassLabels& labels);

// predictions_csv written atomically to `path` (temp + rename). Throws Error naming it.
void write_predictions(const std::filesystem::path& path, const std::vector<ImagePrediction>& predictions,
                       const model::ClassLabels& labels);

}  // namespace vitattn::pipeline
