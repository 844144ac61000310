#pragma once
// What the image command shows of a batch the pipeline runs (pipeline::BatchEvents): its
// messages as log lines with the flags in the roles' places, the progress bar, the --log-json
// lines, --top's classes, and at the end the summary line and the exit status.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "pipeline/run_batch.hpp"
#include "progress.hpp"
#include "run_log.hpp"
#include "top_classes.hpp"

namespace vitattn::cli {

// The closing line: "<n> images in <t> s: <w> written to <out>[, <f> failed][, <s> skipped
// (already done)][, <r> redone (made with other settings)]", or, after a signal, "interrupted
// by SIGINT after <t> s: <w> of <n> images written to <out>, <f> failed, <k> not started[, …
// skipped …][, … redone …]". The total counts the skipped inputs too, and the videos of them
// ("2 images and 1 video"); the redone ones are among the written or failed.
std::string batch_summary(const pipeline::BatchOutcome& outcome, const std::string& out, int signal);

class ImageBatchEvents final : public pipeline::BatchEvents {
 public:
  // `labels` name --top's classes; `classes`: those --class named (said once the run goes
  // ahead); `draw`: the request's (no --log-json log when nothing is drawn).
  ImageBatchEvents(const ImageOptions& o, model::ClassLabels labels, std::vector<pipeline::ChosenClass> classes, bool draw);

  std::optional<std::string> name_of(const std::string& role) const override;  // its flag
  void message(Level level, const std::string& text) override;
  void checked(const pipeline::OutputSet& outputs) override;  // opens --log-json's log
  void already_done(const std::vector<pipeline::InputJob>& jobs) override;
  void jobs_starting(const std::vector<pipeline::InputJob>& jobs, int workers) override;
  void job_finished(const pipeline::InputJob& job, const std::string& error, double ms) override;
  void frames_expected(std::size_t n) override;
  void frame_done() override;
  void warning(const std::string& text) override;
  void top_classes(const pipeline::InputJob& job, std::vector<ClassScore> classes) override;
  void jobs_done() override;
  void batch_files_written(const std::vector<std::filesystem::path>& written, const std::vector<std::string>& errors) override;
  bool should_stop() override;  // a signal was received (InterruptGuard)

  // After run_batch: the summary, the log's last lines, and the exit status: 130/143 after a
  // signal, else 1 when an input failed or a batch file, the log or standard output could
  // not be written, else 0.
  int finish(const pipeline::BatchOutcome& outcome);

 private:
  int report(const pipeline::BatchOutcome& outcome);

  const ImageOptions& o_;
  model::ClassLabels labels_;
  std::vector<pipeline::ChosenClass> classes_;
  bool draw_;
  std::optional<RunLog> log_;
  std::optional<TopClasses> top_;
  std::optional<Progress> progress_;
};

}  // namespace vitattn::cli
