#pragma once
// --top K: each image's K most likely classes, gathered from the workers and printed in input
// order, whatever -j. (Each image writes its own rows, <name>_predictions.csv, and
// predictions.csv is gathered from them: pipeline/batch_files.hpp.)
#include <mutex>
#include <optional>
#include <vector>

#include "pipeline/batch_plan.hpp"
#include "pipeline/predictions.hpp"
#include "pipeline/process_image.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error (a usage error) when --top or --faithfulness is given and the model has no classifier.
void check_classifier(const ImageOptions& o, const VitModel& model);

// One warning when --top asks for more classes than the classifier has (each image then gets
// them all): "--top 20: m.safetensors has 10 classes; each image gets all 10".
void warn_top_above_classes(const ImageOptions& o, const VitModel& model);

class TopClasses {
 public:
  // `jobs` must outlive this and be the vector whose elements add() is handed.
  TopClasses(model::ClassLabels labels, const std::vector<pipeline::InputJob>& jobs);

  // Thread-safe: called by the workers (ProcessOptions::on_top).
  void add(const pipeline::InputJob& job, std::vector<ClassScore> top);

  // Prints one line per image that has its classes, in input order. Returns false when
  // standard output could not take them (said once: standard_output.hpp).
  bool print() const;

 private:
  model::ClassLabels labels_;
  const std::vector<pipeline::InputJob>& jobs_;
  mutable std::mutex mutex_;
  std::vector<std::optional<std::vector<ClassScore>>> top_;  // [job index]
};

}  // namespace vitattn::cli
