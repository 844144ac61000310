#include "app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

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
  io::EncoderView& v = p.view;
  v.layer = o.layer;
  v.rollout = o.rollout;
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold > 0) v.threshold = static_cast<float>(o.threshold);
  v.img_size = o.img_size_given ? o.shape.img_size : 0;
  v.keep_aspect = o.keep_aspect;
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

int run_images(const Options& o) {
  if (o.inputs.empty() && o.save_model.empty()) {
    spdlog::error("no input images given (try: vitattn --help)");
    return kExitUsage;
  }
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly

  const io::Model model = make_model(o);
  check_view(o, model);
  if (!o.save_model.empty()) {
    const auto* single = std::get_if<SingleHeadModel>(&model);
    if (!single) throw Error("--save-model writes the single-head layout; " + o.model + " is a full checkpoint");
    io::save_model(o.save_model, *single);
    spdlog::info("wrote model to {}", o.save_model);
  }
  if (o.inputs.empty()) return kExitOk;

  const fs::path out = o.output;
  prepare_output(out);
  const std::vector<fs::path> inputs(o.inputs.begin(), o.inputs.end());
  const io::ProcessOptions options = process_options(o);
  const char* overlay = io::overlay_suffix(options.format.format);  // "_attn.png", "_attn.jpg", …
  io::BatchPlan plan = io::plan_batch(
      inputs, out, o.recursive,
      [](const fs::path& p) { spdlog::debug("skipped {} (not an image by its extension)", io::display(p)); }, overlay);
  for (const auto& note : plan.renamed) spdlog::warn("{}", note);
  for (const auto& err : plan.errors) spdlog::error("{}", err);
  const std::size_t total = plan.jobs.size();
  const std::size_t skipped = o.skip_existing ? io::drop_finished_jobs(plan, o.save_attention, overlay) : 0;
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
  io::set_library_threads(workers > 1 ? 1 : cores);  // parallel over images, not inside one
  spdlog::debug("{} images, {} workers", plan.jobs.size(), workers);

  const auto start = std::chrono::steady_clock::now();
  Progress progress(plan.jobs.size(), o.verbosity >= 0 && ::isatty(STDERR_FILENO));
  const BatchResult result = run_batch(
      plan.jobs, workers,
      [&](const io::ImageJob& job) {
        io::prepare_output_path(out, job, options.save_attention, overlay);  // no symlink in the output tree is followed
        io::process_image(job, model, options);
      },
      progress, [] { return InterruptGuard::signal_received() != 0; });
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const int sig = InterruptGuard::signal_received();
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
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? kExitOk : kExitUsage;
  }
  setup_logging(options.verbosity);
  try {
    if (options.explain) return explain(std::cout, options.explain_heatmap);
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
