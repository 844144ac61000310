#include "app.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>
#include <functional>

#include "batch_events.hpp"
#include "command_line.hpp"
#include "core/error.hpp"
#include "environment.hpp"
#include "eval_command.hpp"
#include "explain_command.hpp"
#include "forward_command.hpp"
#include "image_request.hpp"
#include "interrupt.hpp"
#include "options.hpp"
#include "precision_option.hpp"
#include "pipeline/run_batch.hpp"
#include "serve_command.hpp"
#include "standard_output.hpp"
#include "video/video_module.hpp"

namespace vitattn::cli {
namespace {

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

// The image command: its options as the pipeline's request, the batch run by the pipeline,
// what happens shown by ImageBatchEvents, which gives the exit status.
int run_images(const ImageOptions& o) {
  if (o.inputs.empty() && o.scale_out.files_from.empty() && o.save_model.empty()) {
    spdlog::error("no input images given (try: vitattn --help)");
    return kExitUsage;
  }
  use_precision(o.precision);
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the run cleanly
  ImageRequest request;
  build_image_request(o, request);
  ImageBatchEvents events(o, request.labels, request.batch.process.view.classes, request.batch.draw);
  const pipeline::BatchOutcome outcome = pipeline::run_batch(request.batch, events);
  if (!request.batch.draw) return kExitOk;  // the model saved, nothing drawn
  return events.finish(outcome);
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
  ImageOptions options;
  add_options(app, options);
  ExplainOptions explain;
  CLI::App* explain_command = add_explain_command(app, explain, options.verbosity);
  ForwardCommandOptions forward;
  CLI::App* forward_command = add_forward_command(app, forward, options.verbosity);
  ServeOptions serve;
  CLI::App* serve_command = add_serve_command(app, serve, options.verbosity);
  EvalCommandOptions eval;
  CLI::App* eval_command = add_eval_command(app, eval, options.verbosity);
  if (const auto status =
          parse(app, argc, argv, options, {*explain_command, *forward_command, *serve_command, *eval_command}))
    return *status;
  eval.model.img_size_given = eval_command->count("--img-size") > 0;
  eval.recorded = recorded_options(*eval_command);
  setup_logging(options.verbosity);
  video::set_video_module_path(video_module_override(process_environment));  // before any video code
  const int status = run_reporting_errors([&] {
    if (explain_command->parsed()) return run_explain(explain);
    if (forward_command->parsed()) return run_forward(forward, options.verbosity);
    if (serve_command->parsed()) return run_serve(serve, options.verbosity);
    if (eval_command->parsed()) return run_eval_command(eval, options.verbosity);
    return run_images(options);
  });
  // What is still buffered for standard output: a write that fails is an error too.
  return !flush_standard_output() && status == kExitOk ? kExitSomeFailed : status;
}

}  // namespace vitattn::cli
