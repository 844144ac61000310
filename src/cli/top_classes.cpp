#include "top_classes.hpp"

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "files/file_io.hpp"
#include "standard_output.hpp"

namespace vitattn::cli {

void check_classifier(const ImageOptions& o, const VitModel& model) {
  if (model.has_classifier()) return;
  if (o.faithfulness) {  // its score is a class's probability
    if (o.model.file.empty()) throw Error("--faithfulness needs a checkpoint with a classifier; the seeded model has none");
    throw Error(fmt::format("--faithfulness needs a checkpoint with a classifier; {} has none{}", o.model.file,
                            no_classifier_note(model)));
  }
  if (o.top <= 0) return;
  if (o.model.file.empty()) throw Error("--top needs a checkpoint with a classifier; the seeded model has none");
  if (const std::string why = no_classifier_reason(model); !why.empty())
    throw Error(fmt::format("--top: {} has no classifier; {}", o.model.file, why));
  throw Error(fmt::format("--top needs a checkpoint with a classifier; {} has none", o.model.file));
}

void warn_top_above_classes(const ImageOptions& o, const VitModel& model) {
  const int classes = model.n_classes();
  if (o.top <= classes || !model.has_classifier()) return;
  spdlog::warn("--top {}: {} has {} classes; each image gets all {}", o.top,
               o.model.file.empty() ? std::string("the model") : o.model.file, classes, classes);
}

TopClasses::TopClasses(model::ClassLabels labels, const std::vector<pipeline::InputJob>& jobs)
    : labels_(std::move(labels)), jobs_(jobs), top_(jobs.size()) {}

void TopClasses::add(const pipeline::InputJob& job, std::vector<ClassScore> top) {
  const auto index = static_cast<std::size_t>(&job - jobs_.data());
  if (index >= jobs_.size()) throw Error(files::display(job.input) + ": not a job of this batch");  // a caller's bug
  const std::lock_guard lock(mutex_);
  top_[index] = std::move(top);
}

bool TopClasses::print() const {
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    if (!top_[i]) continue;
    const std::string line = pipeline::prediction_line({jobs_[i].input, *top_[i]}, labels_) + "\n";
    if (std::fputs(line.c_str(), stdout) == EOF) break;  // the flush below says why
  }
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) standard_output_failed("the classes (--top)", errno ? errno : EIO);
  return !standard_output_has_failed();
}

}  // namespace vitattn::cli
