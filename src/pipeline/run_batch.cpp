#include "run_batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "batch_files.hpp"
#include "batch_pca_fit.hpp"
#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"
#include "model/single_head_layout.hpp"
#include "output_folders.hpp"
#include "output_guard.hpp"
#include "pca_fit.hpp"
#include "threads.hpp"
#include "video/video_module.hpp"
#include "video/video_writer.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;

std::optional<std::string> BatchEvents::name_of(const std::string&) const { return std::nullopt; }

std::string BatchEvents::named(const std::string& role) const { return name_of(role).value_or(role); }

// A run of the batch, as its steps hand it on: plan → check → select → run → batch files.
class BatchRun {
 public:
  BatchRun(const BatchRequest& request, BatchEvents& events)
      : q_(request), ev_(events), model_(*request.model), process_(request.process), outputs_(written_outputs(*request.model, request.process)),
        video_(request.video) {}
  BatchOutcome run();

 private:
  using Level = BatchEvents::Level;
  void say(Level level, const std::string& text) { ev_.message(level, text); }
  std::string named(const std::string& role) const { return ev_.named(role); }
  bool stop_requested() { return ev_.should_stop(); }
  void plan_jobs();
  void choose_pca_fit();
  void check();
  void prepare();
  void tell_plan();
  void fit_batch_pca();
  void select_jobs();
  void run_jobs();
  void run_job(const ProcessOptions& process, const InputJob& job);
  void write_batch_files();

  const BatchRequest& q_;
  BatchEvents& ev_;
  const VitModel& model_;
  ProcessOptions process_;
  OutputSet outputs_;  // every job writes these, no other file
  VideoOptions video_;
  BatchPlan plan_;
  // The whole batch's jobs, in input order, when this process writes the batch files (not
  // under a shard): they are gathered from these jobs' parts (batch_files.hpp).
  std::vector<InputJob> batch_jobs_;
  bool pca_batch_ = false;  // a fitting pass over the whole batch before the jobs (fit_batch_pca)
  int threads_each_ = 1;    // each worker's library threads (run_jobs)
  BatchOutcome out_;
};

namespace {

bool has_video(const BatchPlan& plan) {
  return std::any_of(plan.jobs.begin(), plan.jobs.end(), [](const InputJob& j) { return j.video; });
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

// The batch's jobs. Videos: the codec decides their output's name (.mp4, or .avi without
// H.264), so it is found (a writer opened once) only when there is a video, and the plan
// redone for .avi.
void BatchRun::plan_jobs() {
  plan_ = plan_batch(q_.inputs, q_.output, q_.recursive, outputs_);
  if (!has_video(plan_)) return;
  video_.codec = video::available_video_codec();
  if (video::video_module_loads())  // else each video says it cannot be read, and why
    say(Level::info, fmt::format("videos are written as {}, without sound", video::describe(video_.codec)));
  if (process_.report) say(Level::warn, named(roles::report) + ": videos get no page (only images do)");
  if (outputs_.top)
    say(Level::info, fmt::format("{}: a video's classes go frame by frame to <name>_predictions.csv (not printed, nor in {})",
                                 named(roles::top), predictions_name()));
  if (process_.faithfulness) say(Level::warn, named(roles::faithfulness_scores) + ": videos are not scored (only images are)");
  if (process_.heads_csv) say(Level::warn, "heads.csv: videos get no rows (only images do)");
  if (process_.pca) say(Level::warn, named(roles::pca) + ": videos get no PCA picture (only images do)");
  if (outputs_.video_extension == video::extension(video_.codec)) return;
  outputs_.video_extension = video::extension(video_.codec);
  plan_ = plan_batch(q_.inputs, q_.output, q_.recursive, outputs_);
}

// The PCA fit: each image its own, one over every image of the batch (made by fit_batch_pca;
// refused for fewer than two images) or a fit file (pca_fit.hpp), read now: a file that is
// not a fit for this model is refused before any work.
void BatchRun::choose_pca_fit() {
  if (q_.pca_fit.kind == PcaFitChoice::Kind::image) return;
  if (q_.pca_fit.kind == PcaFitChoice::Kind::batch) {
    const std::size_t images = image_jobs(plan_.jobs);
    if (q_.draw && images < 2)
      throw Error(fmt::format("{0} batch: fits one PCA over the images of a batch, and this run has {1}; use "
                              "{0} image (the default)", named(roles::pca_fit), files::counted(images, "image", "images")));
    pca_batch_ = q_.draw;
    return;
  }
  try {
    process_.pca->fit = read_pca_fit(q_.pca_fit.file, pca_feature_width(model_));
  } catch (const Error& e) {
    throw Error(named(roles::pca_fit) + ": " + e.what());
  }
}

// No output replaces a file the run reads (an input, the model) or another output, and a
// named output replaces only a file of its kind (OutputGuard).
void BatchRun::check() {
  OutputGuard guard;
  for (const fs::path& in : q_.inputs) guard.reads(in, roles::input);
  for (const auto& [file, role] : q_.reads) guard.reads(file, role);
  if (process_.pca && q_.pca_fit.kind == PcaFitChoice::Kind::file)
    guard.reads(q_.pca_fit.file, fmt::format("the PCA fit file ({})", named(roles::pca_fit)));
  if (pca_batch_ && !q_.shard) guard.writes(q_.output / pca_fit_name(), "the PCA fit (pca_fit.npy)");
  guard.jobs(plan_, outputs_);
  // The batch files: also under a shard, which leaves them to the run without it (that run
  // would replace what is there).
  for (const BatchFile& file : batch_files())
    if (q_.draw && outputs_.*file.on) guard.writes(q_.output / file.name, file.role, file.replaces_only);
  for (const BatchRequest::Written& w : q_.writes) guard.writes(w.file, w.role, w.kind);
}

// The first writes: the output folder, the saved model.
void BatchRun::prepare() {
  if (q_.draw) prepare_output_folder(q_.output);
  if (q_.saved_model.empty()) return;
  model::save_model(q_.saved_model, model_);
  say(Level::info, "wrote model to " + q_.saved_model.string());
}

// What planning passed over or renamed, as warnings, errors and notes.
void BatchRun::tell_plan() {
  for (const auto& note : plan_.skipped) say(Level::debug, note);
  if (plan_.folders_not_walked > 0)
    say(Level::debug, fmt::format("{} descends into the {} sub-folders passed over", named(roles::recursive),
                                  plan_.folders_not_walked));
  for (const auto& note : plan_.warnings) say(Level::warn, note);
  for (const auto& p : plan_.own_outputs)
    say(Level::debug, fmt::format("left out {}: a vitattn output (named like one, in the output folder)", files::display(p)));
  for (const auto& note : plan_.renamed) say(Level::warn, note);
  for (const auto& err : plan_.errors) say(Level::error, err);
}

// The batch's PCA fit, before the jobs (batch_pca_fit.hpp); the run without a shard writes
// it as <out>/pca_fit.npy.
void BatchRun::fit_batch_pca() {
  std::optional<PcaFit> fit = pipeline::fit_batch_pca(plan_.jobs, model_, process_, q_.shard.has_value(), ev_);
  if (!fit) return;  // stopped
  process_.pca->fit = std::move(*fit);
  if (q_.shard) return;
  const fs::path file = q_.output / pca_fit_name();
  write_pca_fit(file, *process_.pca->fit);
  say(Level::debug, fmt::format("wrote {}", files::display(file)));
}

// This process's jobs: the shard's (after planning, so that output names, collisions resolved
// over the whole batch, are a one-machine run's), less those skip_existing finds done.
void BatchRun::select_jobs() {
  if (!q_.shard) batch_jobs_ = plan_.jobs;
  if (q_.shard) {
    const std::size_t others = keep_shard(plan_.jobs, *q_.shard);
    say(Level::debug, fmt::format("shard {}/{}: {}, {} left to the other shards", q_.shard->index, q_.shard->count,
                                  files::counted(plan_.jobs.size(), "input", "inputs"), others));
  }
  out_.total = plan_.jobs.size();
  out_.videos = static_cast<std::size_t>(std::count_if(plan_.jobs.begin(), plan_.jobs.end(), [](const InputJob& j) { return j.video; }));
  if (!q_.skip_existing) return;
  const std::vector<InputJob> before = plan_.jobs;
  const FinishedJobs finished = drop_finished_jobs(plan_, outputs_);
  // plan_.jobs is now a subsequence of `before`: walk both to find what went.
  std::vector<InputJob> done;
  std::size_t kept = 0;
  for (const InputJob& job : before) {
    if (kept < plan_.jobs.size() && plan_.jobs[kept].output_base == job.output_base) ++kept;
    else done.push_back(job);
  }
  ev_.already_done(done);
  out_.skipped = finished.done;
  out_.redone = finished.redone.size();
  for (const InputJob& job : finished.redone)
    say(Level::debug, fmt::format("{}: drawn again: its outputs are there, but {} is missing or holds other settings",
                                  files::display(job.input), files::display(with_suffix(job.output_base, settings_suffix().c_str()))));
}

// One job on a worker: an image, or a video with its frames told as they are written. An
// Error about a choice that does not fit this input is said with the front end's name for it.
// A video takes its worker's thread budget as frames at once, each frame's forward on one
// thread of the libraries (a lone worker's: the budget is 1 when there are several workers).
void BatchRun::run_job(const ProcessOptions& process, const InputJob& job) {
  ev_.job_started(job);
  try {
    if (!job.video) {
      process_image(q_.output, job, model_, process, outputs_);
      return;
    }
    VideoOptions v = video_;
    v.on_frames_expected = [this](std::int64_t n) { ev_.frames_expected(static_cast<std::size_t>(n)); };
    v.on_frame = [this] { ev_.frame_done(); };
    v.warn = [this](const std::string& message) { ev_.warning(message); };
    v.stop = [this] { return ev_.should_stop(); };
    v.frames_at_once = threads_each_;
    std::optional<LibraryThreadsFor> one_each;
    if (v.frames_at_once > 1) one_each.emplace(1, threads_each_);
    process_video(q_.output, job, model_, process, v, outputs_);
  } catch (const Error& e) {
    if (!e.subject()) throw;
    const std::optional<std::string> name = ev_.name_of(e.subject()->role);
    if (!name) throw;
    // "x.png: image is 9000x9000 (81.0 MP), over the pixel limit of 50.0 MP (--max-pixels)"
    const std::string value = e.subject()->value.empty() ? "" : " " + e.subject()->value;
    throw Error((e.source().empty() ? files::display(job.input) : e.source()) + ": " + e.detail() + " (" + *name + value + ")");
  }
}

// The jobs on the workers (parallel over inputs, not inside one), each one's end told.
void BatchRun::run_jobs() {
  const int workers = std::min(q_.jobs > 0 ? q_.jobs : cores(), static_cast<int>(plan_.jobs.size()));
  threads_each_ = workers > 1 ? 1 : cores();
  set_library_threads(threads_each_);
  say(Level::debug, fmt::format("{}, {}, {} each", files::counted(plan_.jobs.size(), "image", "images"),
                                files::counted(static_cast<std::size_t>(workers), "worker", "workers"),
                                files::counted(static_cast<std::size_t>(threads_each_), "thread", "threads")));
  ProcessOptions process = process_;
  if (process.top)
    process.on_top = [this](const InputJob& job, std::vector<ClassScore> classes) { ev_.top_classes(job, std::move(classes)); };
  const auto start = std::chrono::steady_clock::now();
  ev_.jobs_starting(plan_.jobs, workers);
  process.damage.warn = [this](const std::string& message) { ev_.warning(message); };
  out_.counts = run_on_workers(
      plan_.jobs, workers, [&](const InputJob& job) { run_job(process, job); },
      // A model file cut short under the run (VitModel::weights_lost): the input that found out
      // failed with the file's name; no other starts, as each would fail alike.
      [this] { return ev_.should_stop() || (model_.weights_lost && !model_.weights_lost().empty()); },
      [this](const InputJob& job, const std::string& error, double ms) { ev_.job_finished(job, error, ms); });
  ev_.jobs_done();
  out_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The batch files (predictions.csv, index.html), gathered from the parts of every finished
// input of the batch, drawn now or before (batch_files.hpp). A shard writes none: it says
// which run does.
void BatchRun::write_batch_files() {
  if (q_.shard) {
    std::string names;
    for (const BatchFile& file : batch_files())
      if (outputs_.*file.on) names += (names.empty() ? "" : " and ") + std::string(file.name);
    if (!names.empty())
      say(Level::info,
          fmt::format("{0} {1}/{2}: {3} not written by a shard; when every shard is done, the same command without {0}, "
                      "with {4}, writes {5} from every shard's images",
                      named(roles::shard), q_.shard->index, q_.shard->count, names, named(roles::skip_existing),
                      names.find(" and ") == std::string::npos ? "it" : "them"));
    return;
  }
  const BatchFilesWritten written = pipeline::write_batch_files(q_.output, batch_jobs_, outputs_);
  ev_.batch_files_written(written.written, written.errors);
  out_.batch_file_errors = written.errors;
}

BatchOutcome BatchRun::run() {
  if (q_.draw) plan_jobs();
  if (process_.pca) choose_pca_fit();
  check();
  ev_.checked(outputs_);
  prepare();
  if (!q_.draw) return out_;
  tell_plan();
  out_.plan_errors = plan_.errors;
  if (pca_batch_) fit_batch_pca();
  select_jobs();
  if (out_.total == 0 && !stop_requested()) {
    say(Level::warn, "no images found in the inputs given");
    out_.found_none = true;
    return out_;
  }
  if (plan_.jobs.empty() || stop_requested()) out_.counts = {0, 0, plan_.jobs.size()};  // every input skipped, or a stop already
  else run_jobs();
  out_.jobs = plan_.jobs;
  write_batch_files();
  if (stop_requested()) out_.stop = StopReason::requested;
  else if (out_.counts.not_started > 0) out_.stop = StopReason::weights_lost;
  return out_;
}

BatchOutcome run_batch(const BatchRequest& request, BatchEvents& events) { return BatchRun(request, events).run(); }

}  // namespace vitattn::pipeline
