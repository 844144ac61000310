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
#include "explain.hpp"
#include "interrupt.hpp"
#include "files/file_io.hpp"
#include "files/file_kind.hpp"
#include "model/single_head_layout.hpp"
#include "tensors/npy.hpp"
#include "model/vit_loader.hpp"
#include "pipeline/output_folders.hpp"
#include "pipeline/process_image.hpp"
#include "pipeline/process_video.hpp"
#include "video/video_module.hpp"
#include "video/video_writer.hpp"
#include "pipeline/report_gallery.hpp"
#include "pipeline/threads.hpp"
#include "options.hpp"
#include "run_log.hpp"
#include "scale_out.hpp"
#include "top_classes.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

constexpr int kExitOk = 0, kExitSomeFailed = 1, kExitUsage = 2;

// The flag that sets each request field: an OptionError from below names its value this way.
std::string flag_of(Field f) {
  switch (f) {
    case Field::heads: return "--heads";
    case Field::layer: return "--layer";
    case Field::head: return "--head";
    case Field::img_size: return "--img-size";
    case Field::keep_aspect: return "--keep-aspect";
    case Field::save_model: return "--save-model";
    case Field::max_pixels: return "--max-pixels";
    case Field::strict: return "--strict";
  }
  return "?";
}

std::string flag_and_value(const OptionError& e) { return flag_of(e.field()) + (e.value().empty() ? "" : " " + e.value()); }

// Before any work: "--layer 3: the model has layers 0…2", "--heads: m.safetensors: …"
std::string option_message(const OptionError& e) {
  return flag_and_value(e) + ": " + (e.source().empty() ? "" : e.source() + ": ") + e.detail();
}

// One image's: "x.png: image is 9000x9000 (81.0 MP), over the pixel limit of 50.0 MP (--max-pixels)"
std::string image_option_message(const OptionError& e, const std::string& input) {
  return (e.source().empty() ? input : e.source()) + ": " + e.detail() + " (" + flag_and_value(e) + ")";
}

void setup_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("vitattn");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbosity < 0 ? spdlog::level::err : verbosity == 0 ? spdlog::level::info : spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

// The colormap's name as the page lists it ("jet"): the typed option holds OpenCV's number.
std::string colormap_name(int colormap) {
  for (const std::string& name : io::colormap_names())
    if (io::colormap_by_name(name) == colormap) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return lower;
    }
  return "jet";
}

// --report: the page starts from the run's own layer, head, rollout, threshold and colours.
io::ReportSettings report_settings(const Options& o) {
  io::ReportSettings r;
  r.max_mb = o.report_max_mb;
  r.precision = o.report_precision;
  r.start.layer = o.layer;
  r.start.head = o.head.choice == pipeline::HeadChoice::all ? "mean" : to_string(o.head);
  r.start.rollout = o.rollout;
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
  v.rollout = o.rollout;
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold) v.threshold = static_cast<float>(*o.threshold);
  v.img_size = o.img_size_given && !o.model.empty() ? o.shape.img_size : 0;  // the seeded model is made at that size
  v.keep_aspect = o.keep_aspect;
  v.head = o.head.choice;
  v.head_index = o.head.index;
  v.fusion = o.head.fusion;
  if (o.report) p.report = report_settings(o);
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

// An output named on the command line (--save-model FILE) must not be an input of the
// run (an image, the --model file), nor where a job's output goes, and may replace only a
// file of the kind it writes. Also: no job output lands on the --model file.
void check_named_outputs(const Options& o, const pipeline::BatchPlan& plan, const pipeline::OutputSet& outputs) {
  const auto same_file = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;  // compare names first: canonical paths cost system calls
    return a.filename() == b.filename() && fs::weakly_canonical(fs::absolute(a, ec), ec) == fs::weakly_canonical(fs::absolute(b, ec), ec);
  };
  const std::string& save = o.save_model;
  if (!save.empty()) {
    if (!o.model.empty() && same_file(save, o.model)) throw Error(fmt::format("--save-model {}: is the --model file; not replaced", save));
    for (const std::string& in : o.inputs)
      if (same_file(save, in)) throw Error(fmt::format("--save-model {}: is an input of this run; not replaced", save));
    for (const pipeline::ImageJob& job : plan.jobs)
      if (same_file(save, job.input)) throw Error(fmt::format("--save-model {}: is an input of this run; not replaced", save));
  }
  for (const pipeline::ImageJob& job : plan.jobs)
    for (const fs::path& p : pipeline::output_paths(job.output_base, outputs, job.video)) {
      if (!save.empty() && same_file(save, p))
        throw Error(fmt::format("--save-model {}: is where the output of {} goes; choose another name", save,
                                io::display(job.input)));
      if (!o.model.empty() && same_file(o.model, p))
        throw Error(fmt::format("{}: its output {} would replace the --model file", io::display(job.input), io::display(p)));
    }
  if (!o.save_model.empty()) io::check_replaceable(o.save_model, io::FileKind::safetensors, "--save-model");
  if (outputs.report)  // the gallery is an output too
    for (const std::string& in : o.inputs)
      if (same_file(in, fs::path(o.output) / pipeline::report_index_name()))
        throw Error(fmt::format("{}: is where --report's gallery goes ({}); not replaced", in, pipeline::report_index_name()));
}

// -v: the patch grid the images go through, once; per image with --keep-aspect.
void log_grid(const Options& o, const VitModel& model, pipeline::ProcessOptions& options) {
  if (o.verbosity < 1) return;
  const int p = model.patch_size;
  const bool file = !o.model.empty();  // the seeded model is made at --img-size: that is its own grid
  if (o.keep_aspect) {
    const int s = file && o.img_size_given ? o.shape.img_size : model.grid_h * p;
    spdlog::debug("grid per image (--keep-aspect): shorter side {} px = {} patches of {} px", s, s / p, p);
    options.on_grid = [](const pipeline::ImageJob& job, const pipeline::InputGrid& g) {
      spdlog::debug("{}: {}x{} image, input {}x{}, grid {}x{}", io::display(job.input), g.image_w, g.image_h, g.input_w,
                    g.input_h, g.grid_w, g.grid_h);
    };
  } else if (file && o.img_size_given) {
    const int g = o.shape.img_size / p;
    spdlog::debug("grid {0}x{0} patches of {1} px (input {2}x{2}, --img-size); the checkpoint's own grid is {3}x{4}", g, p,
                  o.shape.img_size, model.grid_w, model.grid_h);
  } else {
    spdlog::debug("grid {}x{} patches of {} px (input {}x{}{})", model.grid_w, model.grid_h, p, model.grid_w * p,
                  model.grid_h * p, file ? ", the checkpoint's own" : "");
  }
}

int run_images(const Options& o) {
  const bool batch = !o.inputs.empty() || !o.scale_out.files_from.empty();  // images to draw
  if (!batch && o.save_model.empty()) {
    spdlog::error("no input images given (try: vitattn --help)");
    return kExitUsage;
  }
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly
  const std::optional<Shard> shard = resolve_shard(o.scale_out);  // before the model: a wrong environment fails at once

  const io::OpenedModel opened = open_model(o, o.top > 0);
  const VitModel& model = opened.model;
  const io::ClassLabels& labels = opened.labels;
  check_classifier(o, model);
  pipeline::ProcessOptions options = process_options(o);
  pipeline::check_view(model, options.view, o.model.empty() ? "the seeded model" : o.model);  // before any image is read
  log_grid(o, model, options);
  pipeline::OutputSet outputs = pipeline::written_outputs(model, options);  // every job writes these, no other file
  pipeline::VideoOptions video = video_options(o);

  const fs::path out = o.output;
  pipeline::BatchPlan plan;
  std::vector<fs::path> inputs;
  if (batch) {
    inputs = batch_inputs(o.inputs, o.scale_out);  // the command line's, then --files-from's
    plan = pipeline::plan_batch(inputs, out, o.recursive, outputs);
    // Videos: the codec decides their output's name (.mp4, or .avi without H.264), so it is
    // found (a writer opened once) only when there is a video, and the plan redone for .avi.
    if (std::any_of(plan.jobs.begin(), plan.jobs.end(), [](const pipeline::ImageJob& j) { return j.video; })) {
      video.codec = io::available_video_codec();
      if (io::video_module_loads())  // else each video says it cannot be read, and why
        spdlog::info("videos are written as {}, without sound", io::describe(video.codec));
      if (o.report) spdlog::warn("--report: videos get no page (only images do)");
      if (outputs.video_extension != io::extension(video.codec)) {
        outputs.video_extension = io::extension(video.codec);
        plan = pipeline::plan_batch(inputs, out, o.recursive, outputs);
      }
    }
  }
  check_named_outputs(o, plan, outputs);
  if (!o.scale_out.log_json.empty()) check_log_path(o.scale_out.log_json, inputs, plan, outputs);
  if (batch) pipeline::prepare_output_folder(out);
  if (!o.save_model.empty()) {
    io::save_model(o.save_model, model);
    spdlog::info("wrote model to {}", o.save_model);
  }
  if (!batch) return kExitOk;

  for (const auto& note : plan.skipped) spdlog::debug("{}", note);
  for (const auto& note : plan.warnings) spdlog::warn("{}", note);
  for (const auto& p : plan.own_outputs)
    spdlog::debug("left out {}: a vitattn output (named like one, in the output folder)", io::display(p));
  for (const auto& note : plan.renamed) spdlog::warn("{}", note);
  for (const auto& err : plan.errors) spdlog::error("{}", err);
  // After planning: output names (collisions resolved over the whole batch) are a one-machine run's.
  if (shard) {
    const std::size_t others = keep_shard(plan.jobs, *shard);
    spdlog::debug("shard {}/{}: {} inputs, {} left to the other shards", shard->index, shard->count, plan.jobs.size(), others);
  }
  std::optional<RunLog> log;
  if (!o.scale_out.log_json.empty()) log.emplace(o.scale_out.log_json, outputs);
  const std::size_t total = plan.jobs.size();
  const auto videos = static_cast<std::size_t>(
      std::count_if(plan.jobs.begin(), plan.jobs.end(), [](const pipeline::ImageJob& j) { return j.video; }));
  // Every job's page, written now or before (--skip-existing). A shard leaves the gallery out:
  // the shards' galleries would all be <out>/index.html, each with a part of the pages.
  const std::vector<fs::path> report_pages = outputs.report && !shard ? pipeline::report_pages(plan.jobs, out)
                                                                      : std::vector<fs::path>{};
  const std::size_t skipped = o.skip_existing ? drop_finished_jobs_logged(plan, outputs, log ? &*log : nullptr) : 0;
  if (const int sig = InterruptGuard::signal_received()) {
    if (log) log->not_started(plan.jobs, plan.jobs.size(), signal_name(sig));
    spdlog::warn("{}", batch_summary(total, videos, skipped, {0, 0, plan.jobs.size()}, 0.0, io::display(out), sig));
    return exit_status_for_signal(sig);
  }
  if (plan.jobs.empty()) {
    if (skipped == 0) spdlog::warn("no images found in the inputs given");
    else spdlog::info("{}", batch_summary(total, videos, skipped, {}, 0.0, io::display(out), 0));
    return plan.errors.empty() ? kExitOk : kExitSomeFailed;
  }

  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::min(o.jobs > 0 ? o.jobs : cores, static_cast<int>(plan.jobs.size()));
  const int threads_each = workers > 1 ? 1 : cores;  // parallel over images, not inside one
  pipeline::set_library_threads(threads_each);
  spdlog::debug("{} images, {} workers, {} threads each", plan.jobs.size(), workers, threads_each);

  std::optional<TopClasses> top;
  if (o.top > 0) {
    top.emplace(o.top, labels, plan.jobs);
    options.on_logits = [&top](const pipeline::ImageJob& job, const RowVector& logits) { top->add(job, logits); };
  }
  const auto start = std::chrono::steady_clock::now();
  Progress progress(plan.jobs.size(), o.verbosity >= 0 && ::isatty(STDERR_FILENO));
  options.damage.warn = [&progress](const std::string& message) { progress.warn(message); };
  const BatchResult result = run_batch(
      plan.jobs, workers,
      [&](const pipeline::ImageJob& job) {
        try {
          if (!job.video) {
            pipeline::process_image(out, job, model, options);
            return;
          }
          pipeline::VideoOptions v = video;
          v.on_frames_expected = [&progress](std::int64_t n) { progress.add_frames(static_cast<std::size_t>(n)); };
          v.on_frame = [&progress] { progress.frame_done(); };
          v.warn = [&progress](const std::string& message) { progress.warn(message); };
          v.stop = [] { return InterruptGuard::signal_received() != 0; };
          pipeline::process_video(out, job, model, options, v);
        } catch (const OptionError& e) {  // a choice that does not fit this image: said with its flag
          throw Error(image_option_message(e, io::display(job.input)));
        }
      },
      progress, [] { return InterruptGuard::signal_received() != 0; },
      log ? JobDone([&log](const pipeline::ImageJob& job, const std::string& error, double ms) { log->finished(job, error, ms); })
          : JobDone());
  progress.finish();
  if (top) spdlog::debug("wrote {}", io::display(top->finish(out)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const int sig = InterruptGuard::signal_received();
  bool gallery_failed = false;  // the pages are written; a gallery that is not counts as a failure
  if (report_pages.size() > 1 && !sig) {
    try {
      spdlog::debug("wrote {}", io::display(pipeline::write_report_gallery(out, report_pages)));
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      gallery_failed = true;
    }
  }
  const std::string summary = batch_summary(total, videos, skipped, result, seconds, io::display(out), sig);
  if (sig) {
    if (log) log->not_started(plan.jobs, result.not_started, signal_name(sig));
    spdlog::warn("{}", summary);
    return exit_status_for_signal(sig);
  }
  spdlog::info("{}", summary);
  return result.failed || !plan.errors.empty() || gallery_failed ? kExitSomeFailed : kExitOk;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app("vitattn", "vitattn");
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
    check_combinations(app, options);
    check_scale_out(app, options.scale_out);
    for (const CLI::Option* opt : app.get_options())
      if (opt->count() > 0) options.given.insert(opt->get_name());
    options.img_size_given = options.given.count("--img-size") > 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    // One line, like every other error, instead of CLI11's message and usage.
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::cerr << "error: " << what << " (see vitattn --help)\n";
    return kExitUsage;
  }
  setup_logging(options.verbosity);
  io::set_video_module_path(video_module_override(process_environment));  // before any video code
  try {
    if (options.explain) return explain(std::cout, options.explain_heatmap, options.explain_html);
    if (options.forward) return run_forward(options);
    return run_images(options);
  } catch (const OptionError& e) {
    spdlog::error("{}", option_message(e));
    return kExitUsage;
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
}

}  // namespace vitattn::cli
