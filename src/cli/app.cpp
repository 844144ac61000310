#include "app.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "batch_runner.hpp"
#include "environment.hpp"
#include "forward_command.hpp"
#include "model_request.hpp"
#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "explain.hpp"
#include "explain_command.hpp"
#include "forward_options.hpp"
#include "image/image_loader.hpp"
#include "pipeline/class_choice.hpp"
#include "pipeline/view.hpp"
#include "interrupt.hpp"
#include "files/file_io.hpp"
#include "files/file_kind.hpp"
#include "files/text.hpp"
#include "model/single_head_layout.hpp"
#include "tensors/npy.hpp"
#include "model/vit_loader.hpp"
#include "pipeline/output_folders.hpp"
#include "pipeline/output_guard.hpp"
#include "hub/hf_cache.hpp"
#include "pipeline/process_image.hpp"
#include "pipeline/pca_fit.hpp"
#include "core/pca.hpp"
#include "pipeline/process_video.hpp"
#include "video/video_module.hpp"
#include "video/video_writer.hpp"
#include "pipeline/batch_files.hpp"
#include "pipeline/threads.hpp"
#include "options.hpp"
#include "run_log.hpp"
#include "scale_out.hpp"
#include "serve_command.hpp"
#include "settings_record.hpp"
#include "standard_output.hpp"
#include "top_classes.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

constexpr int kExitOk = 0, kExitSomeFailed = 1, kExitUsage = 2;

// The flag that sets each value an Error below may be about (its Subject's role): the
// layers say "layer 3: …", "the log x.jsonl: …"; the command line says "--layer 3: …".
std::optional<std::string> flag_of(const std::string& role) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {pipeline::roles::layer, "--layer"},         {pipeline::roles::head, "--head"},
      {pipeline::roles::input_size, "--img-size"}, {pipeline::roles::keep_aspect, "--keep-aspect"},
      {io::roles::head_count, "--heads"},          {io::roles::saved_model, "--save-model"},
      {io::roles::pixel_limit, "--max-pixels"},    {io::roles::strict_decoding, "--strict"},
      {pipeline::roles::method, "--method"},       {pipeline::roles::class_choice, "--class"},
      {pipeline::roles::legrad_from, "--legrad-from"}, {pipeline::roles::query, "--query"},
      {pipeline::roles::log, "--log-json"},        {kHeatmapRole, "--heatmap"},
      {kPageRole, "--html"}};
  for (const auto& [r, flag] : kFlags)
    if (role == r) return flag;
  return std::nullopt;
}

// "--layer 3", "--save-model m.safetensors", "--max-pixels"; nothing for a role without a flag.
std::optional<std::string> flag_and_value(const Error& e) {
  if (!e.subject()) return std::nullopt;
  const auto flag = flag_of(e.subject()->role);
  if (!flag) return std::nullopt;
  return *flag + (e.subject()->value.empty() ? "" : " " + e.subject()->value);
}

// Before any work: "--layer 3: the model has layers 0…2", "--heads: m.safetensors: …"
std::string option_message(const Error& e) {
  const auto flag = flag_and_value(e);
  if (!flag) return e.what();
  return *flag + ": " + (e.source().empty() ? "" : e.source() + ": ") + e.detail();
}

// One image's: "x.png: image is 9000x9000 (81.0 MP), over the pixel limit of 50.0 MP (--max-pixels)"
std::string image_option_message(const Error& e, const std::string& input) {
  const auto flag = flag_and_value(e);
  if (!flag) return e.what();
  return (e.source().empty() ? input : e.source()) + ": " + e.detail() + " (" + *flag + ")";
}

// FFmpeg's own complaints about a file would land on stderr around vitattn's one-line
// messages: OpenCV reads OPENCV_FFMPEG_LOGLEVEL when it first loads FFmpeg, AV_LOG_QUIET is
// −8. Set before any thread starts (setenv is not thread-safe); a value the user set is kept,
// to debug a file.
void quiet_video_library() { ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0); }

void setup_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("vitattn");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbosity < 0 ? spdlog::level::err : verbosity == 0 ? spdlog::level::info : spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

// The colormap's name as the page lists it ("jet"): the typed option holds OpenCV's number.
std::string colormap_name(int colormap) {
  for (const std::string& name : io::colormap_names())
    if (io::colormap_by_name(name) == colormap) return io::lower_case(name);
  return "jet";
}

// --report: the page starts from the run's own layer, head, rollout, threshold and colours.
io::ReportSettings report_settings(const Options& o) {
  io::ReportSettings r;
  r.max_mb = o.report_max_mb;
  r.precision = o.report_precision;
  r.start.layer = o.layer;
  r.start.head = o.head.choice == pipeline::HeadChoice::all ? "mean" : pipeline::head_text(o.head);
  r.start.rollout = o.method.is(pipeline::MapMethod::rollout);
  // A class-specific --method opens the page on that method's map (of the most likely class).
  r.start.method = pipeline::report_start_method(o.method.all ? pipeline::MapMethod::attention : o.method.one);
  r.start.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold) r.start.threshold = static_cast<float>(*o.threshold);
  r.start.alpha = o.render.alpha;
  r.start.colormap = colormap_name(o.render.colormap);
  r.start.smooth = o.render.interp != io::Interp::nearest;
  return r;
}

pipeline::ProcessOptions process_options(const Options& o) {
  pipeline::ProcessOptions p;
  p.render = o.render;
  p.format = o.format;
  p.scale = !o.no_scale;
  p.save_attention = o.save_attention;
  p.max_pixels = o.max_pixels;
  p.damage.strict = o.strict;
  pipeline::EncoderView& v = p.view;
  v.layer = o.layer;
  v.methods = chosen_methods(o, true);  // "all": narrowed to the model's in plan_run
  v.legrad_from = o.legrad_from;
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold) v.threshold = static_cast<float>(*o.threshold);
  v.img_size = o.model.img_size_given && !o.model.file.empty() ? o.model.shape.img_size : 0;  // the seeded model is made at that size
  v.keep_aspect = o.keep_aspect;
  v.head = o.head.choice;
  v.head_index = o.head.index;
  v.fusion = o.head.fusion;
  v.query = o.query;
  if (o.report) p.report = report_settings(o);
  if (o.faithfulness) p.faithfulness = pipeline::FaithfulnessRequest{o.faithfulness_steps};
  p.artifact_ratio = static_cast<float>(o.artifact_ratio);
  p.clean = o.clean;
  p.heads_csv = o.heads_csv || o.save_attention;
  if (o.pca) {
    p.pca.emplace();  // the fit: chosen in plan_run (choose_pca_fit)
    if (o.pca_mask) p.pca->mask = static_cast<float>(*o.pca_mask);
  }
  return p;
}

pipeline::VideoOptions video_options(const Options& o) {
  pipeline::VideoOptions v;
  v.frames_dir = o.frames_dir;
  v.every = o.every;
  v.max_frames = o.max_frames;
  if (o.smooth) v.smooth = static_cast<float>(*o.smooth);
  return v;
}

// A run of the image command, as its steps hand it on: plan → check → run → report.
struct ImageRun {
  std::optional<Shard> shard;  // --shard: this process's part of the batch
  io::ClassLabels labels;      // --top: the classifier's class names
  VitModel model;
  pipeline::ProcessOptions process;
  pipeline::OutputSet outputs;   // every job writes these, no other file
  pipeline::VideoOptions video;
  bool batch = false;            // images to draw (else only --save-model)
  std::vector<fs::path> inputs;  // the command line's, then --files-from's
  pipeline::BatchPlan plan;
  // The whole batch's jobs, in input order, when this process writes the batch files (not
  // under --shard): they are gathered from these jobs' parts (pipeline/batch_files.hpp).
  std::vector<pipeline::InputJob> batch_jobs;
  std::size_t total = 0, videos = 0;  // for the summary: planned, of them videos
  SkipCounts skips;                   // --skip-existing: already done, and drawn again (other settings)
  bool pca_batch = false;  // --pca-fit batch: a fitting pass over the whole batch before the jobs (fit_batch_pca)
};

// -v: the patch grid the images go through, once; per image with --keep-aspect.
void log_grid(const Options& o, const VitModel& model, pipeline::ProcessOptions& options) {
  if (o.verbosity < 1) return;
  const int p = model.patch_size;
  const SeededShape& shape = o.model.shape;
  const bool file = !o.model.file.empty();  // the seeded model is made at --img-size: that is its own grid
  if (o.keep_aspect) {
    const int s = file && o.model.img_size_given ? shape.img_size : model.grid_h * p;
    spdlog::debug("grid per image (--keep-aspect): shorter side {} px = {} of {} px", s,
                  io::counted(static_cast<std::size_t>(s / p), "patch", "patches"), p);
    options.on_grid = [](const pipeline::InputJob& job, const pipeline::InputGrid& g) {
      spdlog::debug("{}: {}x{} image, input {}x{}, grid {}x{}", io::display(job.input), g.image_w, g.image_h, g.input_w,
                    g.input_h, g.grid_w, g.grid_h);
    };
  } else if (file && o.model.img_size_given) {
    const int g = shape.img_size / p;
    spdlog::debug("grid {0}x{0} patches of {1} px (input {2}x{2}, --img-size); the checkpoint's own grid is {3}x{4}", g, p,
                  shape.img_size, model.grid_w, model.grid_h);
  } else {
    spdlog::debug("grid {}x{} patches of {} px (input {}x{}{})", model.grid_w, model.grid_h, p, model.grid_w * p,
                  model.grid_h * p, file ? ", the checkpoint's own" : "");
  }
}

// Fewer patches than this a side and a map is a few cells, which say little about where the
// model looks (a 1×1 grid is one cell): drawn, but said.
constexpr int kUsefulGridSide = 4;

// --img-size on a checkpoint that leaves a grid (its shorter side, with --keep-aspect) below
// kUsefulGridSide patches: one warning naming the grid and the size that gives a useful one.
void warn_small_grid(const Options& o, const VitModel& model) {
  if (o.model.file.empty() || !o.model.img_size_given) return;  // the seeded model is made at --img-size
  const int p = model.patch_size, side = o.model.shape.img_size / p;
  if (side >= kUsefulGridSide) return;
  const std::string grid =
      o.keep_aspect ? fmt::format("a shorter side of {}", io::counted(static_cast<std::size_t>(side), "patch", "patches"))
                    : fmt::format("a {0}x{0} grid", side);
  const int own = model.grid_h * p;  // a RoPE model's default input
  spdlog::warn("--img-size {}: {} px patches make {}, too few for a map; give --img-size {} or more{}",
               o.model.shape.img_size, p, grid, kUsefulGridSide * p,
               own >= kUsefulGridSide * p ? fmt::format(" (the model's own input is {} px)", own) : std::string());
}

bool has_video(const pipeline::BatchPlan& plan) {
  return std::any_of(plan.jobs.begin(), plan.jobs.end(), [](const pipeline::InputJob& j) { return j.video; });
}

// The batch's jobs. Videos: the codec decides their output's name (.mp4, or .avi without
// H.264), so it is found (a writer opened once) only when there is a video, and the plan
// redone for .avi.
void plan_jobs(const Options& o, ImageRun& r) {
  r.inputs = batch_inputs(o.inputs, o.scale_out);
  r.plan = pipeline::plan_batch(r.inputs, o.output, o.recursive, r.outputs);
  if (!has_video(r.plan)) return;
  r.video.codec = io::available_video_codec();
  if (io::video_module_loads())  // else each video says it cannot be read, and why
    spdlog::info("videos are written as {}, without sound", io::describe(r.video.codec));
  if (o.report) spdlog::warn("--report: videos get no page (only images do)");
  if (r.outputs.top)
    spdlog::info("--top: a video's classes go frame by frame to <name>_predictions.csv (not printed, nor in {})",
                 pipeline::predictions_name());
  if (o.faithfulness) spdlog::warn("--faithfulness: videos are not scored (only images are)");
  if (r.process.heads_csv) spdlog::warn("heads.csv: videos get no rows (only images do)");
  if (o.pca) spdlog::warn("--pca: videos get no PCA picture (only images do)");
  if (r.outputs.video_extension == io::extension(r.video.codec)) return;
  r.outputs.video_extension = io::extension(r.video.codec);
  r.plan = pipeline::plan_batch(r.inputs, o.output, o.recursive, r.outputs);
}

// --method all narrowed to what the model allows (no class-specific method without a
// classifier), and --class resolved against the classifier's classes and names.
void choose_maps(const Options& o, const VitModel& model, const io::ClassLabels& labels, const std::string& model_name,
                    pipeline::EncoderView& view) {
  view.methods = chosen_methods(o, model.has_classifier());
  if (!o.classes.empty() && !model.has_classifier()) {  // a class-specific method names itself in check_view; --method all comes here
    pipeline::check_view(model, view, model_name);
    throw Error(fmt::format("--class: {} has no classifier, so no classes{}", model_name, no_classifier_note(model)));
  }
  if (!o.classes.empty()) view.classes = pipeline::resolve_classes(o.classes, labels, model.n_classes(), model_name);
  view.class_names = labels.names;
  if (o.method.all && !model.has_classifier())
    spdlog::info("--method all: {} has no classifier; drawing attention and rollout", model_name);
}

// The batch's images (its jobs less the videos).
std::size_t image_jobs(const pipeline::BatchPlan& plan) {
  return static_cast<std::size_t>(
      std::count_if(plan.jobs.begin(), plan.jobs.end(), [](const pipeline::InputJob& j) { return !j.video; }));
}

// --pca-fit: image (each image its own fit), batch (one fit over every image of the batch, made by
// fit_batch_pca; refused for fewer than two images) or a fit file (pca_fit.hpp), read now: a
// file that is not a fit for this model is refused before any work.
void choose_pca_fit(const Options& o, ImageRun& r) {
  if (o.pca_fit == "image") return;
  if (o.pca_fit == "batch") {
    const std::size_t images = image_jobs(r.plan);
    if (r.batch && images < 2)
      throw Error(fmt::format("--pca-fit batch: fits one PCA over the images of a batch, and this run has {}; use "
                              "--pca-fit image (the default)", io::counted(images, "image", "images")));
    r.pca_batch = r.batch;
    return;
  }
  try {
    r.process.pca->fit = pipeline::read_pca_fit(o.pca_fit, pipeline::pca_feature_width(r.model));
  } catch (const Error& e) {
    throw Error(std::string("--pca-fit: ") + e.what());
  }
}

// --pca-fit batch: the fitting pass. Every image of the whole batch (also under --shard, and
// those --skip-existing will pass over), one after the other in input order, each forward on
// every core, its patch features added to one CovarianceSum (D×D doubles, whatever the number
// of images): every shard makes the same fit, bit for bit. An image that cannot be read is
// left out (its own job fails and says why). The run without --shard writes <out>/pca_fit.npy.
void fit_batch_pca(const Options& o, ImageRun& r) {
  pipeline::set_library_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  spdlog::info("--pca-fit batch: one PCA over the {} first (one more forward each){}",
               io::counted(image_jobs(r.plan), "image", "images"),
               r.shard ? "; every shard fits over the whole batch, --pca-fit FILE avoids it" : "");
  CovarianceSum sum(pipeline::pca_feature_width(r.model));
  std::size_t used = 0;
  for (const pipeline::InputJob& job : r.plan.jobs) {
    if (job.video || InterruptGuard::signal_received()) continue;
    try {
      const pipeline::PatchFeatures f = pipeline::image_patch_features(job.input, r.model, r.process);
      sum.add(f.features, f.grid_h, f.grid_w);
      ++used;
    } catch (const std::exception& e) {  // an image's own failure (also one over --max-pixels): its job says it
      spdlog::debug("--pca-fit batch: left out of the fit: {}", e.what());  // the error names the input
    }
  }
  if (InterruptGuard::signal_received()) return;
  if (used == 0) throw Error("--pca-fit batch: no image of the batch could be read");
  r.process.pca->fit = pipeline::as_in_file(fit_pca(sum));
  spdlog::debug("--pca-fit batch: one fit over {}", io::counted(used, "image", "images"));
  if (r.shard) return;
  const fs::path file = fs::path(o.output) / pipeline::pca_fit_name();
  pipeline::write_pca_fit(file, *r.process.pca->fit);
  spdlog::debug("wrote {}", io::display(file));
}

// Step 1, plan: the shard, the model, what is drawn and written, the jobs. Throws Error
// (a usage or model error) before any file is written.
ImageRun plan_run(const Options& o) {
  ImageRun r;
  r.shard = resolve_shard(o.scale_out);  // before the model: a wrong environment fails at once
  // The class names: --top's, --class's, the report's class picker, and the titles of a sheet of class-specific maps.
  const std::vector<pipeline::MapMethod> methods = chosen_methods(o, true);
  const bool class_specific = std::any_of(methods.begin(), methods.end(), pipeline::class_specific);
  io::OpenedModel opened = open_model(o.model, o.verbosity, o.top > 0 || o.report || class_specific);
  r.model = std::move(opened.model);
  r.labels = std::move(opened.labels);
  check_classifier(o, r.model);
  warn_top_above_classes(o, r.model);
  r.process = process_options(o);
  const std::string model_name = o.model.file.empty() ? "the seeded model" : o.model.file;
  choose_maps(o, r.model, r.labels, model_name, r.process.view);
  pipeline::check_view(r.model, r.process.view, model_name);
  warn_small_grid(o, r.model);
  log_grid(o, r.model, r.process);
  if (o.clean && o.verbosity >= 1)
    r.process.on_clean = [](const pipeline::InputJob& job, int layer, std::size_t left_out) {
      spdlog::debug("{}: --clean left out {} at layer {}", io::display(job.input),
                    io::counted(left_out, "flagged token", "flagged tokens"), layer);
    };
  if (o.top > 0) r.process.top = pipeline::TopRequest{o.top, r.labels};
  // --report's class picker: --top's classes, else the 3 most likely.
  if (o.report) r.process.report_classes = pipeline::TopRequest{o.top > 0 ? o.top : 3, r.labels};
  if (o.report && o.top > 10 && r.model.has_classifier())
    spdlog::warn("--report --top {}: each page holds the class-specific maps of {} classes, one backward pass a class",
                 o.top, std::min(o.top, r.model.n_classes()));
  r.batch = !o.inputs.empty() || !o.scale_out.files_from.empty();
  // Each job's record of what made its outputs (settings_record.hpp): a batch's only.
  if (r.batch)
    r.process.settings = settings_record(o.recorded, opened.file.empty() ? std::nullopt : std::optional(opened.file));
  r.outputs = pipeline::written_outputs(r.model, r.process);
  r.video = video_options(o);
  if (r.batch) plan_jobs(o, r);
  if (o.pca) choose_pca_fit(o, r);
  return r;
}

// Step 2, check: no output replaces a file the run reads (an input, the model) or another
// output, and a named output replaces only a file of its kind (pipeline::OutputGuard). The
// roles are the guard's words; option_message puts the flag in their place.
void check_run(const Options& o, const ImageRun& r) {
  pipeline::OutputGuard guard;
  for (const fs::path& in : r.inputs) guard.reads(in, pipeline::roles::input);
  if (!o.model.file.empty() && !io::is_hf_model(o.model.file)) guard.reads(o.model.file, pipeline::roles::model_file);
  if (o.pca && o.pca_fit != "image" && o.pca_fit != "batch") guard.reads(o.pca_fit, "the PCA fit file (--pca-fit)");
  if (r.pca_batch && !r.shard) guard.writes(fs::path(o.output) / pipeline::pca_fit_name(), "the PCA fit (pca_fit.npy)");
  guard.jobs(r.plan, r.outputs);
  // The batch files: also under --shard, which leaves them to the run without it (that run
  // would replace what is there).
  for (const pipeline::BatchFile& file : pipeline::batch_files())
    if (r.batch && r.outputs.*file.on) guard.writes(fs::path(o.output) / file.name, file.role, file.replaces_only);
  if (!o.scale_out.log_json.empty() && o.scale_out.log_json != "-")
    guard.writes(o.scale_out.log_json, pipeline::roles::log, io::FileKind::json_lines);
  if (!o.save_model.empty()) guard.writes(o.save_model, io::roles::saved_model, io::FileKind::safetensors);
}

// The first writes: the output folder, --save-model.
void prepare_run(const Options& o, const ImageRun& r) {
  if (r.batch) pipeline::prepare_output_folder(o.output);
  if (o.save_model.empty()) return;
  io::save_model(o.save_model, r.model);
  spdlog::info("wrote model to {}", o.save_model);
}

// What planning passed over or renamed, as warnings, errors and (-v) notes.
void log_plan(const pipeline::BatchPlan& plan) {
  for (const auto& note : plan.skipped) spdlog::debug("{}", note);
  if (plan.folders_not_walked > 0) spdlog::debug("-r descends into the {} sub-folders passed over", plan.folders_not_walked);
  for (const auto& note : plan.warnings) spdlog::warn("{}", note);
  for (const auto& p : plan.own_outputs)
    spdlog::debug("left out {}: a vitattn output (named like one, in the output folder)", io::display(p));
  for (const auto& note : plan.renamed) spdlog::warn("{}", note);
  for (const auto& err : plan.errors) spdlog::error("{}", err);
}

// This process's jobs: the shard's (after planning, so that output names, collisions resolved
// over the whole batch, are a one-machine run's), less those --skip-existing finds done.
void select_jobs(const Options& o, ImageRun& r, RunLog* log) {
  if (!r.shard) r.batch_jobs = r.plan.jobs;
  if (r.shard) {
    const std::size_t others = keep_shard(r.plan.jobs, *r.shard);
    spdlog::debug("shard {}/{}: {}, {} left to the other shards", r.shard->index, r.shard->count,
                  io::counted(r.plan.jobs.size(), "input", "inputs"), others);
  }
  r.total = r.plan.jobs.size();
  r.videos = static_cast<std::size_t>(std::count_if(r.plan.jobs.begin(), r.plan.jobs.end(),
                                                    [](const pipeline::InputJob& j) { return j.video; }));
  if (!o.skip_existing) return;
  const pipeline::FinishedJobs finished = drop_finished_jobs_logged(r.plan, r.outputs, log);
  r.skips = {finished.done, finished.redone.size()};
  for (const pipeline::InputJob& job : finished.redone)
    spdlog::debug("{}: drawn again: its outputs are there, but {} is missing or holds other settings",
                  io::display(job.input), io::display(pipeline::with_suffix(job.output_base, pipeline::settings_suffix().c_str())));
}

// One job on a worker: an image, or a video with its frames counted on the progress bar.
void run_job(const Options& o, const ImageRun& r, const pipeline::ProcessOptions& process, Progress& progress,
             const pipeline::InputJob& job) {
  try {
    if (!job.video) {
      pipeline::process_image(o.output, job, r.model, process);
      return;
    }
    pipeline::VideoOptions v = r.video;
    v.on_frames_expected = [&progress](std::int64_t n) { progress.add_frames(static_cast<std::size_t>(n)); };
    v.on_frame = [&progress] { progress.frame_done(); };
    v.warn = [&progress](const std::string& message) { progress.warn(message); };
    v.stop = [] { return InterruptGuard::signal_received() != 0; };
    pipeline::process_video(o.output, job, r.model, process, v);
  } catch (const Error& e) {  // a choice that does not fit this image: said with its flag
    if (!e.subject()) throw;
    throw Error(image_option_message(e, io::display(job.input)));
  }
}

// Step 3, run: the jobs on the workers (parallel over images, not inside one), --top's
// classes gathered, the log told each job's end. Returns the counts and the seconds taken.
std::pair<BatchResult, double> run_jobs(const Options& o, ImageRun& r, RunLog* log) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::min(o.jobs > 0 ? o.jobs : cores, static_cast<int>(r.plan.jobs.size()));
  const int threads_each = workers > 1 ? 1 : cores;
  pipeline::set_library_threads(threads_each);
  spdlog::debug("{}, {}, {} each", io::counted(r.plan.jobs.size(), "image", "images"),
                io::counted(static_cast<std::size_t>(workers), "worker", "workers"),
                io::counted(static_cast<std::size_t>(threads_each), "thread", "threads"));

  pipeline::ProcessOptions process = r.process;
  std::optional<TopClasses> top;
  if (o.top > 0) {
    top.emplace(r.labels, r.plan.jobs);
    process.on_top = [&top](const pipeline::InputJob& job, std::vector<ClassScore> classes) {
      top->add(job, std::move(classes));
    };
  }
  const auto start = std::chrono::steady_clock::now();
  Progress progress(r.plan.jobs.size(), o.verbosity >= 0 && ::isatty(STDERR_FILENO));
  process.damage.warn = [&progress](const std::string& message) { progress.warn(message); };
  const JobDone done = log ? JobDone([log](const pipeline::InputJob& job, const std::string& error, double ms) {
    log->finished(job, error, ms);
  })
                           : JobDone();
  const BatchResult result = run_batch(
      r.plan.jobs, workers, [&](const pipeline::InputJob& job) { run_job(o, r, process, progress, job); }, progress,
      // A model file cut short under the run (VitModel::weights_lost): the image that found out
      // failed with the file's name; no other starts, as each would fail alike.
      [&r] { return InterruptGuard::signal_received() != 0 || (r.model.weights_lost && !r.model.weights_lost().empty()); },
      done);
  progress.finish();
  if (top) top->print();  // a failure is said there, and counted in run_images
  return {result, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// The batch files (predictions.csv, index.html), gathered from the parts of every finished
// image of the batch, drawn now or before (pipeline/batch_files.hpp). A shard writes none:
// it says which run does. Returns false when one could not be written (a failure of the run:
// the images' own outputs are there).
bool write_batch_files(const Options& o, const ImageRun& r) {
  if (r.shard) {
    std::string names;
    for (const pipeline::BatchFile& file : pipeline::batch_files())
      if (r.outputs.*file.on) names += (names.empty() ? "" : " and ") + std::string(file.name);
    if (!names.empty())
      spdlog::info("--shard {}/{}: {} not written by a shard; when every shard is done, the same command without --shard, "
                   "with --skip-existing, writes {} from every shard's images",
                   r.shard->index, r.shard->count, names, names.find(" and ") == std::string::npos ? "it" : "them");
    return true;
  }
  const pipeline::BatchFilesWritten written = pipeline::write_batch_files(o.output, r.batch_jobs, r.outputs);
  for (const fs::path& p : written.written) spdlog::debug("wrote {}", io::display(p));
  for (const std::string& e : written.errors) spdlog::error("{}", e);
  return written.errors.empty();
}

// Step 4, report: the batch files, the summary, after a signal the jobs not started in the
// log; the exit status: 130/143 after a signal, else 1 when an input failed or a batch file,
// the log or standard output could not be written, else 0.
int report_run(const Options& o, const ImageRun& r, const BatchResult& result, double seconds, RunLog* log) {
  const std::string out = io::display(o.output);
  const bool batch_files_written = write_batch_files(o, r);
  if (const int sig = InterruptGuard::signal_received()) {
    if (log) log->not_started(r.plan.jobs, result.not_started, fmt::format("the run was interrupted by {}", signal_name(sig)));
    spdlog::warn("{}", batch_summary(r.total, r.videos, r.skips, result, seconds, out, sig));
    return exit_status_for_signal(sig);
  }
  if (log && result.not_started > 0) log->not_started(r.plan.jobs, result.not_started, "the model's weights were lost");
  spdlog::info("{}", batch_summary(r.total, r.videos, r.skips, result, seconds, out, 0));
  const bool log_written = !log || !log->failed();
  return result.failed || result.not_started || !r.plan.errors.empty() || !batch_files_written || !log_written ||
                 standard_output_has_failed()
             ? kExitSomeFailed
             : kExitOk;
}

int run_images(const Options& o) {
  if (o.inputs.empty() && o.scale_out.files_from.empty() && o.save_model.empty()) {
    spdlog::error("no input images given (try: vitattn --help)");
    return kExitUsage;
  }
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly
  ImageRun r = plan_run(o);
  check_run(o, r);
  // Which classes --class named, once the run is known to go ahead (an error stays one line).
  if (!r.process.view.classes.empty()) spdlog::info("--class: the maps of {}", pipeline::class_names(r.process.view.classes));
  // The log first: a log that cannot be opened stops the run (exit 2) before anything is written.
  std::optional<RunLog> log;
  if (r.batch && !o.scale_out.log_json.empty()) log.emplace(o.scale_out.log_json, r.outputs);
  RunLog* const log_or_none = log ? &*log : nullptr;
  prepare_run(o, r);
  if (!r.batch) return kExitOk;

  log_plan(r.plan);
  if (r.pca_batch) fit_batch_pca(o, r);
  select_jobs(o, r, log_or_none);
  int status = kExitOk;
  if (r.total == 0 && !InterruptGuard::signal_received()) {
    spdlog::warn("no images found in the inputs given");
    status = r.plan.errors.empty() ? kExitOk : kExitSomeFailed;
  } else if (r.plan.jobs.empty() || InterruptGuard::signal_received()) {  // every input skipped, or a signal already
    status = report_run(o, r, {0, 0, r.plan.jobs.size()}, 0.0, log_or_none);
  } else {
    const auto [result, seconds] = run_jobs(o, r, log_or_none);
    status = report_run(o, r, result, seconds, log_or_none);
  }
  if (log && !log->close() && status == kExitOk) status = kExitSomeFailed;
  return status;
}

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`, up to 3.
int edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  if (n > m + 3 || m > n + 3) return 3;
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return std::min(d[n][m], 3);
}

// A first input that is no file but a subcommand's name mistyped ("explian"): a usage error,
// said before any folder is made, instead of an image that fails to open.
void check_not_a_misspelt_command(const CLI::App& app, const Options& o) {
  if (o.inputs.empty()) return;
  const std::string& first = o.inputs.front();
  std::error_code ec;
  if (fs::symlink_status(first, ec).type() != fs::file_type::not_found) return;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (first.size() >= 3 && edit_distance(io::lower_case(first), sub->get_name()) <= 2)
      throw CLI::ValidationError(fmt::format("{}: no such file or folder; did you mean {}?", first, sub->get_name()));
}

// A subcommand takes its own options: one given before it belongs to the image command and
// would be dropped without a word ("vitattn -o out forward …"). -q and -v count for all.
void check_nothing_before(const CLI::App& app, const CLI::App& sub) {
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || name == "--quiet" || name == "--verbose") continue;
    if (!opt->nonpositional())
      throw CLI::ValidationError(fmt::format("{} takes no images; give its own arguments after it", sub.get_name()));
    throw CLI::ValidationError(
        fmt::format("{} goes after {}: vitattn {} {} …", name, sub.get_name(), sub.get_name(), name));
  }
}

// The command a usage error is about, as its help is asked for: "vitattn serve" when a
// subcommand was reached (each has its own --help), else "vitattn".
std::string command_name(const CLI::App& app) {
  const std::vector<CLI::App*> subs = app.get_subcommands();  // those parsed, the first one reached first
  return subs.empty() ? "vitattn" : "vitattn " + subs.front()->get_name();
}

// CLI11's message, but for arguments left over: CLI11 2.1 lists them last first ("3 --heads");
// here they are in the order given ("--heads 3"), from every command that has some.
std::string usage_error_text(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return e.what();
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) return e.what();
  std::string listed;
  for (const std::string& a : extras) listed += (listed.empty() ? "" : " ") + a;
  return (extras.size() > 1 ? "The following arguments were not expected: " : "The following argument was not expected: ") +
         listed;
}

// The command line into `options`; nothing when it goes on, else the exit status (0 after
// --help and --version, 2 after a usage error, said in one line).
std::optional<int> parse(CLI::App& app, int argc, char** argv, Options& options, CLI::App& explain, CLI::App& forward,
                         CLI::App& serve) {
  try {
    app.parse(argc, argv);
    if (explain.parsed()) check_nothing_before(app, explain);
    if (serve.parsed()) check_nothing_before(app, serve);
    if (forward.parsed()) {
      check_nothing_before(app, forward);
      check_forward(forward);
    }
    if (!explain.parsed() && !forward.parsed() && !serve.parsed()) {
      check_not_a_misspelt_command(app, options);
      check_combinations(app, options);
      check_scale_out(app, options.scale_out);
    }
    options.model.img_size_given = app.count("--img-size") > 0;
    options.recorded = recorded_options(app);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    // One line, like every other error, instead of CLI11's message and usage.
    std::string what = usage_error_text(app, e);
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::cerr << "error: " << what << " (see " << command_name(app) << " --help)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

// Runs one command; an Error it throws is a usage or model error, said in one line with the
// flag of the value it is about.
int run_reporting_errors(const std::function<int()>& command) {
  try {
    return command();
  } catch (const Error& e) {
    spdlog::error("{}", option_message(e));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
  return kExitUsage;
}

}  // namespace

int run(int argc, char** argv) {
  quiet_video_library();
  CLI::App app("vitattn", "vitattn");
  Options options;
  add_options(app, options);
  ExplainOptions explain;
  CLI::App* explain_command = add_explain_command(app, explain, options.verbosity);
  ForwardCommandOptions forward;
  CLI::App* forward_command = add_forward_command(app, forward, options.verbosity);
  ServeOptions serve;
  CLI::App* serve_command = add_serve_command(app, serve, options.verbosity);
  if (const auto status = parse(app, argc, argv, options, *explain_command, *forward_command, *serve_command))
    return *status;
  setup_logging(options.verbosity);
  io::set_video_module_path(video_module_override(process_environment));  // before any video code
  const int status = run_reporting_errors([&] {
    if (explain_command->parsed()) return run_explain(explain);
    if (forward_command->parsed()) return run_forward(forward, options.verbosity);
    if (serve_command->parsed()) return run_serve(serve, options.verbosity);
    return run_images(options);
  });
  // What is still buffered for standard output: a write that fails is an error too.
  return !flush_standard_output() && status == kExitOk ? kExitSomeFailed : status;
}

}  // namespace vitattn::cli
