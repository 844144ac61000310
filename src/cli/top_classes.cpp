#include "top_classes.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "io/file_io.hpp"

namespace vitattn::cli {

void check_classifier(const Options& o, const io::Model& model) {
  if (o.top <= 0) return;
  const auto* vit = std::get_if<VitModel>(&model);
  if (o.model.empty()) throw Error("--top needs a checkpoint with a classifier; the seeded model has none");
  if (!vit) throw Error("--top needs a checkpoint with a classifier; " + o.model + " is the single-head layout");
  if (vit->w_head.size() == 0) throw Error("--top needs a checkpoint with a classifier; " + o.model + " has none (a backbone only)");
}

TopClasses::TopClasses(int k, io::ClassLabels labels, const std::vector<io::ImageJob>& jobs)
    : k_(k), labels_(std::move(labels)), jobs_(jobs), top_(jobs.size()) {}

void TopClasses::add(const io::ImageJob& job, const RowVector& logits) {
  const auto index = static_cast<std::size_t>(&job - jobs_.data());
  if (index >= jobs_.size()) throw Error(io::display(job.input) + ": not a job of this batch");  // a caller's bug
  std::vector<ClassScore> top = top_classes(logits, k_);
  const std::lock_guard lock(mutex_);
  top_[index] = std::move(top);
}

std::filesystem::path TopClasses::finish(const std::filesystem::path& out) const {
  const std::lock_guard lock(mutex_);
  std::vector<io::ImagePrediction> predictions;
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (top_[i]) predictions.push_back({jobs_[i].input, *top_[i]});
  for (const io::ImagePrediction& p : predictions) std::printf("%s\n", io::prediction_line(p, labels_).c_str());
  std::fflush(stdout);
  const std::filesystem::path path = out / "predictions.csv";
  io::write_predictions(path, predictions, labels_);
  return path;
}

}  // namespace vitattn::cli
