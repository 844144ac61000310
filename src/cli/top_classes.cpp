#include "top_classes.hpp"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::cli {

void check_classifier(const Options& o, const VitModel& model) {
  if (o.top <= 0 || model.w_head.size() > 0) return;
  if (o.model.file.empty()) throw Error("--top needs a checkpoint with a classifier; the seeded model has none");
  throw Error(fmt::format("--top needs a checkpoint with a classifier; {} has none", o.model.file));
}

void warn_top_above_classes(const Options& o, const VitModel& model) {
  const auto classes = model.w_head.rows();  // (n_classes, d_model)
  if (o.top <= classes || classes == 0) return;
  spdlog::warn("--top {}: {} has {} classes; each image gets all {}", o.top,
               o.model.file.empty() ? std::string("the model") : o.model.file, classes, classes);
}

TopClasses::TopClasses(int k, io::ClassLabels labels, const std::vector<pipeline::ImageJob>& jobs)
    : k_(k), labels_(std::move(labels)), jobs_(jobs), top_(jobs.size()) {}

void TopClasses::add(const pipeline::ImageJob& job, const RowVector& logits) {
  const auto index = static_cast<std::size_t>(&job - jobs_.data());
  if (index >= jobs_.size()) throw Error(io::display(job.input) + ": not a job of this batch");  // a caller's bug
  std::vector<ClassScore> top = top_classes(logits, k_);
  const std::lock_guard lock(mutex_);
  top_[index] = std::move(top);
}

std::filesystem::path TopClasses::finish(const std::filesystem::path& out) const {
  const std::lock_guard lock(mutex_);
  std::vector<pipeline::ImagePrediction> predictions;
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (top_[i]) predictions.push_back({jobs_[i].input, *top_[i]});
  for (const pipeline::ImagePrediction& p : predictions) std::printf("%s\n", pipeline::prediction_line(p, labels_).c_str());
  std::fflush(stdout);
  const std::filesystem::path path = out / pipeline::predictions_name();
  pipeline::write_predictions(path, predictions, labels_);
  return path;
}

}  // namespace vitattn::cli
