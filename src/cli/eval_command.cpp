#include "eval_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "command_line.hpp"
#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"
#include "hub/hf_cache.hpp"
#include "interrupt.hpp"
#include "model_request.hpp"
#include "pipeline/class_choice.hpp"
#include "pipeline/eval_job.hpp"
#include "pipeline/job_outputs.hpp"
#include "pipeline/view.hpp"
#include "run_log.hpp"

namespace vitattn::cli {
namespace {

// One line of --labels-csv: "file,class"; the file may hold commas, the class does not.
std::pair<std::string, std::string> label_fields(const std::string& line, const std::string& where) {
  const std::size_t comma = line.rfind(',');
  if (comma == std::string::npos || comma == 0 || comma + 1 == line.size())
    throw Error(fmt::format("--labels-csv {}: not a file,class row: {}", where, line));
  return {line.substr(0, comma), line.substr(comma + 1)};
}

// --labels-csv's rows, each class resolved against the model (index or label), by file. A header
// "file,class" is skipped; a blank line too. One line naming the file and line for a bad row.
pipeline::EvalLabels read_labels(const std::string& path, const model::OpenedModel& opened, const std::string& model) {
  pipeline::EvalLabels labels;
  if (path.empty()) return labels;
  if (!opened.model.has_classifier())
    throw Error("--labels-csv " + path + ": " + model + " has no classifier: there is no class to aim at");
  const std::vector<std::uint8_t> bytes = files::read_file(path);
  std::string text(bytes.begin(), bytes.end());
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line == "file,class")) continue;
    const std::string where = fmt::format("{}:{}", path, line_no);
    auto [file, value] = label_fields(line, where);
    try {
      const std::vector<pipeline::ChosenClass> c = pipeline::resolve_classes({value}, opened.labels, opened.model.n_classes(), model);
      labels[file] = c.front();
    } catch (const Error& e) {
      throw Error(fmt::format("--labels-csv {}: class {}: {}", where, value, e.detail().empty() ? e.what() : e.detail()));
    }
  }
  return labels;
}

pipeline::EvalRequest eval_request(const EvalCommandOptions& o, const VitModel& model) {
  pipeline::EvalRequest r;
  r.output = o.output;
  r.recursive = o.recursive;
  r.jobs = o.jobs;
  r.model = &model;
  if (!o.masks.empty()) r.masks = o.masks;
  r.sanity = !o.no_sanity;
  pipeline::ProcessOptions& p = r.process;
  p.scale = !o.no_scale;
  p.save_attention = o.save_attention;
  pipeline::EncoderView& v = p.view;
  v.layer = o.layer;
  v.methods = eval_methods(o.methods, model.has_classifier());
  v.legrad_from = o.legrad_from;
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  v.lrp_gamma_linear = static_cast<float>(o.lrp_gamma_linear);
  v.lrp_gamma_conv = static_cast<float>(o.lrp_gamma_conv);
  v.img_size = o.model.img_size_given ? o.model.shape.img_size : 0;
  v.keep_aspect = o.keep_aspect;
  return r;
}

// What happens as the run goes: warnings and failures as log lines, each image's end in the
// --log-json log, Ctrl-C polled (InterruptGuard).
pipeline::EvalEvents eval_events(std::optional<RunLog>& log, const std::string& log_json, const pipeline::OutputSet& outputs) {
  pipeline::EvalEvents events;
  // The log once the output guard passed (it may not replace an input), before anything is written.
  events.checked = [&log, log_json, outputs] {
    if (!log_json.empty()) log.emplace(log_json, outputs);
  };
  events.warn = [](const std::string& line) { spdlog::warn("{}", line); };
  events.failed = [](const std::string& line) { spdlog::error("{}", line); };
  events.should_stop = [] { return InterruptGuard::signal_received() != 0; };
  events.finished = [&log](const pipeline::InputJob& job, const std::string& error, double ms) {
    if (log) log->finished(job, error, ms);
  };
  events.already_done = [&log](const std::vector<pipeline::InputJob>& jobs) {
    if (log) log->already_done(jobs);
  };
  return events;
}

// ", 2 failed, 3 skipped (already done)": what else happened to this run's images.
std::string others(const pipeline::EvalOutcome& o) {
  std::string s;
  if (o.failed) s += fmt::format(", {} failed", o.failed);
  if (o.not_started) s += fmt::format(", {} not started", o.not_started);
  if (o.skipped) s += fmt::format(", {} skipped (already done)", o.skipped);
  if (o.redone) s += fmt::format(", {} redone (made with other settings)", o.redone);
  return s;
}

// The run's last lines: the masks, the flagged methods, the summary; the exit status.
int report(const std::optional<Shard>& shard, const pipeline::EvalOutcome& outcome, std::optional<RunLog>& log) {
  for (const std::string& e : outcome.part_errors) spdlog::error("{}", e);
  if (outcome.missing_masks > 0)
    spdlog::warn("{} without a mask: left out of the segmentation metrics",
                 files::counted(outcome.missing_masks, "image", "images"));
  for (const std::string& m : outcome.flagged)
    spdlog::warn("{}: its maps stay alike (Spearman > {}) with every block randomised: they do not follow the weights",
                 m, pipeline::kSanityFlag);
  const std::string measured = files::counted(outcome.images, "image", "images") + " measured" + others(outcome);
  if (shard)
    spdlog::info("{}; --shard {}/{}: {}, {}, {} and {} not written by a shard; when every shard is done, the same "
                 "command without --shard, with --skip-existing, writes them from every shard's images",
                 measured, shard->index, shard->count, pipeline::eval_summary_name(), pipeline::eval_images_name(),
                 pipeline::eval_curves_name(), pipeline::eval_page_name());
  else
    spdlog::info("{} → {} ({})", measured, files::display(outcome.written.front()),
                 files::counted(outcome.gathered, "image", "images"));
  const int sig = InterruptGuard::signal_received();
  if (log && outcome.not_started > 0)
    log->not_started(outcome.jobs, outcome.not_started,
                     sig ? fmt::format("the run was interrupted by {}", signal_name(sig)) : "the run stopped");
  const bool log_written = !log || log->close();
  if (sig) {
    spdlog::warn("interrupted by {}: the images in hand were finished, {} not started", signal_name(sig), outcome.not_started);
    return exit_status_for_signal(sig);
  }
  return outcome.failed > 0 || !outcome.part_errors.empty() || !log_written ? kExitSomeFailed : kExitOk;
}

}  // namespace

int run_eval_command(const EvalCommandOptions& o, int verbosity) {
  const std::optional<Shard> shard = resolve_shard(o.scale_out);  // before the model: a wrong environment fails at once
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly
  model::OpenedModel opened = open_requested_model(o.model, verbosity, !o.labels_csv.empty());
  pipeline::EvalRequest request = eval_request(o, opened.model);
  request.inputs = batch_inputs(o.inputs, o.scale_out);
  request.shard = shard;
  request.skip_existing = o.skip_existing;
  request.settings = settings_record(o.recorded, opened.file.empty() ? std::nullopt : std::optional(opened.file), "eval");
  request.labels = read_labels(o.labels_csv, opened, o.model.file);
  if (!o.model.file.empty() && !hub::is_hf_model(o.model.file)) request.reads.emplace_back(o.model.file, pipeline::roles::model_file);
  if (!o.labels_csv.empty()) request.reads.emplace_back(o.labels_csv, "the labels file (--labels-csv)");
  if (!o.scale_out.log_json.empty() && o.scale_out.log_json != "-")
    request.writes.push_back({o.scale_out.log_json, pipeline::roles::log, files::FileKind::json_lines});
  pipeline::check_view(opened.model, request.process.view, o.model.file);
  request.process = pipeline::checked_options(opened.model, request.process);
  spdlog::info("eval: {}, beside the random baseline", pipeline::method_names(request.process.view.methods, ", "));
  std::optional<RunLog> log;  // opened before anything is written: a log that cannot be is a usage error
  const pipeline::EvalOutcome outcome =
      pipeline::run_eval(request, eval_events(log, o.scale_out.log_json, pipeline::eval_outputs(request)));
  return report(shard, outcome, log);
}

}  // namespace vitattn::cli
