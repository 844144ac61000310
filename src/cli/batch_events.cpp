#include "batch_events.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "command_line.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"
#include "interrupt.hpp"
#include "pipeline/class_choice.hpp"
#include "standard_output.hpp"

namespace vitattn::cli {
namespace {

// "3 images", "1 video", "2 images and 1 video": a video is one input, not one image.
std::string count_inputs(std::size_t total, std::size_t videos) {
  if (videos == 0) return files::counted(total, "image", "images");
  if (videos == total) return files::counted(total, "video", "videos");
  return files::counted(total - videos, "image", "images") + " and " + files::counted(videos, "video", "videos");
}

}  // namespace

std::string batch_summary(const pipeline::BatchOutcome& b, const std::string& out, int signal) {
  const pipeline::BatchCounts& r = b.counts;
  const std::string skip = (b.skipped ? fmt::format(", {} skipped (already done)", b.skipped) : std::string()) +
                           (b.redone ? fmt::format(", {} redone (made with other settings)", b.redone) : std::string());
  if (signal != 0)
    return fmt::format("interrupted by {} after {:.2f} s: {} of {} written to {}, {} failed, {} not started{}",
                       signal_name(signal), b.seconds, r.written, count_inputs(b.total, b.videos), out, r.failed,
                       r.not_started, skip);
  return fmt::format("{} in {:.2f} s: {} written to {}{}{}{}", count_inputs(b.total, b.videos), b.seconds, r.written, out,
                     r.failed ? fmt::format(", {} failed", r.failed) : std::string(),
                     r.not_started ? fmt::format(", {} not started", r.not_started) : std::string(), skip);
}

ImageBatchEvents::ImageBatchEvents(const ImageOptions& o, model::ClassLabels labels, std::vector<pipeline::ChosenClass> classes,
                                   bool draw)
    : o_(o), labels_(std::move(labels)), classes_(std::move(classes)), draw_(draw) {}

std::optional<std::string> ImageBatchEvents::name_of(const std::string& role) const { return flag_of(role); }

void ImageBatchEvents::message(Level level, const std::string& text) {
  switch (level) {
    case Level::debug: spdlog::debug("{}", text); break;
    case Level::info: spdlog::info("{}", text); break;
    case Level::warn: spdlog::warn("{}", text); break;
    case Level::error: spdlog::error("{}", text); break;
  }
}

void ImageBatchEvents::checked(const pipeline::OutputSet& outputs) {
  // Which classes --class named, once the run is known to go ahead (an error stays one line).
  if (!classes_.empty())
    spdlog::info("{}: the maps of {}", o_.classes.empty() ? "the texts" : "--class", pipeline::class_names(classes_));
  // The log first: a log that cannot be opened stops the run (exit 2) before anything is written.
  if (draw_ && !o_.scale_out.log_json.empty()) log_.emplace(o_.scale_out.log_json, outputs);
}

void ImageBatchEvents::already_done(const std::vector<pipeline::InputJob>& jobs) {
  if (log_) log_->already_done(jobs);
}

void ImageBatchEvents::jobs_starting(const std::vector<pipeline::InputJob>& jobs, int) {
  if (o_.top > 0) top_.emplace(labels_, jobs);
  progress_.emplace(jobs.size(), o_.verbosity >= 0 && ::isatty(STDERR_FILENO));
}

void ImageBatchEvents::job_finished(const pipeline::InputJob& job, const std::string& error, double ms) {
  if (log_) log_->finished(job, error, ms);
  if (!error.empty()) progress_->error(error);
  progress_->advance(error.empty());
}

void ImageBatchEvents::frames_expected(std::size_t n) { progress_->add_frames(n); }

void ImageBatchEvents::frame_done() { progress_->frame_done(); }

void ImageBatchEvents::warning(const std::string& text) {
  if (progress_) progress_->warn(text);
  else spdlog::warn("{}", text);
}

void ImageBatchEvents::top_classes(const pipeline::InputJob& job, std::vector<ClassScore> classes) {
  if (top_) top_->add(job, std::move(classes));
}

void ImageBatchEvents::jobs_done() {
  progress_->finish();
  if (top_) top_->print();  // a failure is said there, and counted in report (standard_output_has_failed)
}

void ImageBatchEvents::batch_files_written(const std::vector<std::filesystem::path>& written,
                                           const std::vector<std::string>& errors) {
  for (const std::filesystem::path& p : written) spdlog::debug("wrote {}", files::display(p));
  for (const std::string& e : errors) spdlog::error("{}", e);
}

bool ImageBatchEvents::should_stop() { return InterruptGuard::signal_received() != 0; }

// The summary, after a signal the jobs not started in the log; the exit status.
int ImageBatchEvents::report(const pipeline::BatchOutcome& b) {
  const std::string out = files::display(o_.output);
  if (const int sig = InterruptGuard::signal_received()) {
    if (log_) log_->not_started(b.jobs, b.counts.not_started, fmt::format("the run was interrupted by {}", signal_name(sig)));
    spdlog::warn("{}", batch_summary(b, out, sig));
    return exit_status_for_signal(sig);
  }
  if (log_ && b.counts.not_started > 0) log_->not_started(b.jobs, b.counts.not_started, "the model's weights were lost");
  spdlog::info("{}", batch_summary(b, out, 0));
  const bool log_written = !log_ || !log_->failed();
  return b.counts.failed || b.counts.not_started || !b.plan_errors.empty() || !b.batch_file_errors.empty() || !log_written ||
                 standard_output_has_failed()
             ? kExitSomeFailed
             : kExitOk;
}

int ImageBatchEvents::finish(const pipeline::BatchOutcome& b) {
  int status = b.found_none ? (b.plan_errors.empty() ? kExitOk : kExitSomeFailed) : report(b);
  if (log_ && !log_->close() && status == kExitOk) status = kExitSomeFailed;
  return status;
}

}  // namespace vitattn::cli
