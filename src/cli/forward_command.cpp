#include "forward_command.hpp"

#include <spdlog/spdlog.h>

#include <thread>

#include "files/file_io.hpp"
#include "hub/hf_cache.hpp"
#include "model_request.hpp"
#include "pipeline/forward_job.hpp"
#include "pipeline/output_folders.hpp"
#include "pipeline/threads.hpp"

namespace vitattn::cli {
namespace {

pipeline::ForwardRequest forward_request(const Options& o) {
  pipeline::ForwardRequest r;
  r.inputs.assign(o.forward_inputs.begin(), o.forward_inputs.end());
  r.output = o.output;
  if (!io::is_hf_model(o.model)) r.model_file = o.model;  // a hub model is in the cache, far from any output
  r.scale = !o.no_scale;
  return r;
}

}  // namespace

int run_forward(const Options& o) {
  const pipeline::ForwardRequest request = forward_request(o);
  pipeline::check_forward_outputs(request);
  const io::OpenedModel opened = open_model(o);  // `forward` needs --model: a CLI11 rule
  pipeline::prepare_output_folder(request.output);
  pipeline::set_library_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  int failed = 0;
  for (const pipeline::ForwardInputResult& r : pipeline::forward_files(opened.model, request)) {
    if (!r.error.empty()) {
      spdlog::error("{}", r.error);
      ++failed;
      continue;
    }
    spdlog::info("{}: {} input{} → {}", io::display(r.input), r.images, r.images == 1 ? "" : "s",
                 io::display(request.output / (r.input.stem().string() + "_*.npy")));
  }
  return failed ? 1 : 0;
}

}  // namespace vitattn::cli
