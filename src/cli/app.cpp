#include "app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "batch_runner.hpp"
#include "forward_command.hpp"
#include "model_setup.hpp"
#include "core/error.hpp"
#include "explain.hpp"
#include "interrupt.hpp"
#include "io/file_io.hpp"
#include "io/file_kind.hpp"
#include "io/model_file.hpp"
#include "io/npy.hpp"
#include "io/vit_loader.hpp"
#include "io/process_image.hpp"
#include "io/threads.hpp"
#include "options.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

constexpr int kExitOk = 0, kExitSomeFailed = 1, kExitUsage = 2;

void setup_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("vitattn");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbosity < 0 ? spdlog::level::err : verbosity == 0 ? spdlog::level::info : spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

// --report: the page starts from the run's own layer, head, rollout, threshold and colours.
io::ReportSettings report_settings(const Options& o) {
  io::ReportSettings r;
  r.max_mb = o.report_max_mb;
  r.start.layer = o.layer;
  r.start.head = o.head == "all" ? "mean" : o.head;
  r.start.rollout = o.rollout;
  r.start.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold > 0) r.start.threshold = static_cast<float>(o.threshold);
  r.start.alpha = o.alpha;
  r.start.colormap = o.colormap;
  for (char& c : r.start.colormap) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.start.smooth = o.interp != "nearest";
  return r;
}

// A batch with --report: <out>/index.html, the gallery of the pages written (now or by the
// run that --skip-existing resumes). Never through a symlink, never over an input.
void write_index(const fs::path& out, const std::vector<fs::path>& pages) {
  const fs::path index = out / io::report_index_name();
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(index, ec))) {
    spdlog::error("{}: is a symbolic link; the gallery is not written", io::display(index));
    return;
  }
  io::write_report_index(out, pages);
  spdlog::debug("wrote {}", io::display(index));
}

io::ProcessOptions process_options(const Options& o) {
  io::ProcessOptions p;
  p.render.interp = o.interp == "nearest" ? io::Interp::nearest : o.interp == "cubic" ? io::Interp::cubic : io::Interp::linear;
  p.render.colormap = *io::colormap_by_name(o.colormap);  // the CLI validator only lets known names through
  p.render.alpha = o.alpha;
  p.format.format = o.format == "jpg" ? io::ImageFormat::jpg : o.format == "webp" ? io::ImageFormat::webp : io::ImageFormat::png;
  p.format.quality = o.quality;
  p.scale = !o.no_scale;
  p.save_attention = o.save_attention;
  p.max_pixels = o.max_pixels;
  p.damage.strict = o.strict;
  io::EncoderView& v = p.view;
  v.layer = o.layer;
  v.rollout = o.rollout;
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold > 0) v.threshold = static_cast<float>(o.threshold);
  v.img_size = o.img_size_given ? o.shape.img_size : 0;
  v.keep_aspect = o.keep_aspect;
  if (o.report) p.report = report_settings(o);
  if (o.head == "all") {
    v.head = io::HeadChoice::all;
  } else if (o.head == "mean" || o.head == "max" || o.head == "min") {
    v.head = io::HeadChoice::fuse;
    v.fusion = o.head == "mean" ? HeadFusion::mean : o.head == "max" ? HeadFusion::max : HeadFusion::min;
  } else {
    v.head = io::HeadChoice::index;
    v.head_index = std::stoi(o.head);  // the validator let only digits through
  }
  return p;
}

// Choices that depend on the model: caught before any image is read.
void check_view(const Options& o, const io::Model& model) {
  const auto* vit = std::get_if<VitModel>(&model);
  if (!vit) {
    for (const char* encoder_only : {"--layer", "--head", "--rollout", "--keep-aspect", "--family", "--heads", "--eps", "--gelu", "--pos-interp"})
      if (o.given.count(encoder_only))
        throw Error(std::string(encoder_only) + " needs a ViT checkpoint; " + o.model + " is the single-head layout");
    return;
  }
  io::resolve_layer(o.layer, vit->n_layers());
  const io::ProcessOptions p = process_options(o);
  if (p.view.head == io::HeadChoice::index && p.view.head_index >= vit->n_heads)
    throw Error("--head " + o.head + ": the model has heads 0…" + std::to_string(vit->n_heads - 1));
}

// The output folder must exist and take files before any work starts.
void prepare_output(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(io::display(out) + ": cannot create output folder: " + ec.message());
  if (!fs::is_directory(out, ec)) throw Error(io::display(out) + ": output path exists and is not a folder");
  if (::access(out.c_str(), W_OK | X_OK) != 0)
    throw Error(io::display(out) + ": output folder is not writable: " + std::strerror(errno));
}

// An output named on the command line (--save-model FILE) must not be an input of the
// run (an image, the --model file), nor where a job's output goes, and may replace only a
// file of the kind it writes. Also: no job output lands on the --model file.
void check_named_outputs(const Options& o, const io::BatchPlan& plan, const io::OutputSet& outputs) {
  const auto same_file = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;  // compare names first: canonical paths cost system calls
    return a.filename() == b.filename() && fs::weakly_canonical(fs::absolute(a, ec), ec) == fs::weakly_canonical(fs::absolute(b, ec), ec);
  };
  const std::string save = "--save-model " + o.save_model;
  if (!o.save_model.empty()) {
    if (!o.model.empty() && same_file(o.save_model, o.model)) throw Error(save + ": is the --model file; not replaced");
    for (const std::string& in : o.inputs)
      if (same_file(o.save_model, in)) throw Error(save + ": is an input of this run; not replaced");
    for (const io::ImageJob& job : plan.jobs)
      if (same_file(o.save_model, job.input)) throw Error(save + ": is an input of this run; not replaced");
  }
  for (const io::ImageJob& job : plan.jobs)
    for (const fs::path& p : io::output_paths(job.output_base, outputs)) {
      if (!o.save_model.empty() && same_file(o.save_model, p))
        throw Error(save + ": is where the output of " + io::display(job.input) + " goes; choose another name");
      if (!o.model.empty() && same_file(o.model, p))
        throw Error(io::display(job.input) + ": its output " + io::display(p) + " would replace the --model file");
    }
  if (!o.save_model.empty()) io::check_replaceable(o.save_model, io::FileKind::safetensors, "--save-model");
  if (outputs.report)  // the gallery is an output too
    for (const std::string& in : o.inputs)
      if (same_file(in, fs::path(o.output) / io::report_index_name()))
        throw Error(in + ": is where --report's gallery goes (" + io::report_index_name() + "); not replaced");
}

// -v: the patch grid the images go through, once; per image with --keep-aspect.
void log_grid(const Options& o, const io::Model& model, io::ProcessOptions& options) {
  if (o.verbosity < 1) return;
  if (const auto* single = std::get_if<SingleHeadModel>(&model)) {
    spdlog::debug("grid {0}x{0} patches of {1} px (input {2}x{2})", single->grid_size(), single->patch_size, single->img_size());
    return;
  }
  const auto& vit = std::get<VitModel>(model);
  const int p = vit.patch_size;
  if (o.keep_aspect) {
    const int s = o.img_size_given ? o.shape.img_size : vit.grid_h * p;
    spdlog::debug("grid per image (--keep-aspect): shorter side {} px = {} patches of {} px", s, s / p, p);
    options.on_grid = [](const io::ImageJob& job, const io::InputGrid& g) {
      spdlog::debug("{}: {}x{} image, input {}x{}, grid {}x{}", io::display(job.input), g.image_w, g.image_h, g.input_w,
                    g.input_h, g.grid_w, g.grid_h);
    };
  } else if (o.img_size_given) {
    const int g = o.shape.img_size / p;
    spdlog::debug("grid {0}x{0} patches of {1} px (input {2}x{2}, --img-size); the checkpoint's own grid is {3}x{4}", g, p,
                  o.shape.img_size, vit.grid_w, vit.grid_h);
  } else {
    spdlog::debug("grid {}x{} patches of {} px (input {}x{}, the checkpoint's own)", vit.grid_w, vit.grid_h, p,
                  vit.grid_w * p, vit.grid_h * p);
  }
}

int run_images(const Options& o) {
  if (o.inputs.empty() && o.save_model.empty()) {
    spdlog::error("no input images given (try: vitattn --help)");
    return kExitUsage;
  }
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly

  const io::Model model = make_model(o);
  check_view(o, model);
  io::ProcessOptions options = process_options(o);
  log_grid(o, model, options);
  const io::OutputSet outputs = io::written_outputs(model, options);  // every job writes these, no other file

  const fs::path out = o.output;
  io::BatchPlan plan;
  if (!o.inputs.empty()) {
    const std::vector<fs::path> inputs(o.inputs.begin(), o.inputs.end());
    plan = io::plan_batch(inputs, out, o.recursive, outputs);
  }
  check_named_outputs(o, plan, outputs);
  if (!o.inputs.empty()) prepare_output(out);
  if (!o.save_model.empty()) {
    const auto* single = std::get_if<SingleHeadModel>(&model);
    if (!single) throw Error("--save-model writes the single-head layout; " + o.model + " is a full checkpoint");
    io::save_model(o.save_model, *single);
    spdlog::info("wrote model to {}", o.save_model);
  }
  if (o.inputs.empty()) return kExitOk;

  for (const auto& note : plan.skipped) spdlog::debug("{}", note);
  for (const auto& note : plan.warnings) spdlog::warn("{}", note);
  for (const auto& p : plan.own_outputs)
    spdlog::debug("left out {}: a vitattn output (named like one, in the output folder)", io::display(p));
  for (const auto& note : plan.renamed) spdlog::warn("{}", note);
  for (const auto& err : plan.errors) spdlog::error("{}", err);
  const std::size_t total = plan.jobs.size();
  std::vector<fs::path> report_pages;  // every job's page, written now or before (--skip-existing)
  if (outputs.report)
    for (const io::ImageJob& job : plan.jobs)
      report_pages.push_back(io::with_suffix(job.output_base, io::report_suffix().c_str()).lexically_relative(out));
  const std::size_t skipped = o.skip_existing ? io::drop_finished_jobs(plan, outputs) : 0;
  if (const int sig = InterruptGuard::signal_received()) {
    spdlog::warn("{}", batch_summary(total, skipped, {0, 0, plan.jobs.size()}, 0.0, io::display(out), sig));
    return exit_status_for_signal(sig);
  }
  if (plan.jobs.empty()) {
    if (skipped == 0) spdlog::warn("no images found in the inputs given");
    else spdlog::info("{}", batch_summary(total, skipped, {}, 0.0, io::display(out), 0));
    return plan.errors.empty() ? kExitOk : kExitSomeFailed;
  }

  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::min(o.jobs > 0 ? o.jobs : cores, static_cast<int>(plan.jobs.size()));
  const int threads_each = workers > 1 ? 1 : cores;  // parallel over images, not inside one
  io::set_library_threads(threads_each);
  spdlog::debug("{} images, {} workers, {} threads each", plan.jobs.size(), workers, threads_each);

  const auto start = std::chrono::steady_clock::now();
  Progress progress(plan.jobs.size(), o.verbosity >= 0 && ::isatty(STDERR_FILENO));
  options.damage.warn = [&progress](const std::string& message) { progress.warn(message); };
  const BatchResult result = run_batch(
      plan.jobs, workers,
      [&](const io::ImageJob& job) {
        io::prepare_output_path(out, job, outputs);  // no symlink in the output tree is followed
        io::process_image(job, model, options);
      },
      progress, [] { return InterruptGuard::signal_received() != 0; });
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const int sig = InterruptGuard::signal_received();
  if (report_pages.size() > 1 && !sig) write_index(out, report_pages);
  const std::string summary = batch_summary(total, skipped, result, seconds, io::display(out), sig);
  if (sig) {
    spdlog::warn("{}", summary);
    return exit_status_for_signal(sig);
  }
  spdlog::info("{}", summary);
  return result.failed || !plan.errors.empty() ? kExitSomeFailed : kExitOk;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app("vitattn", "vitattn");
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
    check_combinations(app, options);
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
  try {
    if (options.explain) return explain(std::cout, options.explain_heatmap, options.explain_html);
    if (options.forward) return run_forward(options);
    return run_images(options);
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  }
}

}  // namespace vitattn::cli
