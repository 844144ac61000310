#pragma once
// --top K: each image's K most likely classes, gathered from the workers, then printed and
// written to <out>/predictions.csv in input order, whatever -j.
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "pipeline/batch_plan.hpp"
#include "pipeline/predictions.hpp"
#include "pipeline/process_image.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error (a usage error) when --top is given and the model has no classifier.
void check_classifier(const Options& o, const VitModel& model);

// One warning when --top asks for more classes than the classifier has (each image then gets
// them all): "--top 20: m.safetensors has 10 classes; each image gets all 10".
void warn_top_above_classes(const Options& o, const VitModel& model);

class TopClasses {
 public:
  // `jobs` must outlive this and be the vector whose elements add() is handed.
  TopClasses(int k, io::ClassLabels labels, const std::vector<pipeline::ImageJob>& jobs);

  // Thread-safe: called by the workers (ProcessOptions::on_logits).
  void add(const pipeline::ImageJob& job, const RowVector& logits);

  // Prints one line per image that has its classes, in input order, and writes them to
  // out/predictions.csv. Returns the CSV's path.
  std::filesystem::path finish(const std::filesystem::path& out) const;

 private:
  int k_;
  io::ClassLabels labels_;
  const std::vector<pipeline::ImageJob>& jobs_;
  mutable std::mutex mutex_;
  std::vector<std::optional<std::vector<ClassScore>>> top_;  // [job index]
};

}  // namespace vitattn::cli
