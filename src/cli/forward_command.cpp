#include "forward_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "files/file_io.hpp"
#include "hub/hf_cache.hpp"
#include "model_request.hpp"
#include "pipeline/forward_job.hpp"
#include "pipeline/output_folders.hpp"
#include "pipeline/threads.hpp"

namespace vitattn::cli {
namespace {

pipeline::ForwardRequest forward_request(const ForwardCommandOptions& o) {
  pipeline::ForwardRequest r;
  r.inputs.assign(o.tensors.begin(), o.tensors.end());
  r.output = o.output;
  if (!io::is_hf_model(o.model.file)) r.model_file = o.model.file;  // a hub model is in the cache, far from any output
  r.scale = !o.no_scale;
  r.class_index = o.class_index;
  for (RelevanceMethod m : o.methods)  // each once: "chefer,chefer" writes one file
    if (std::find(r.methods.begin(), r.methods.end(), m) == r.methods.end()) r.methods.push_back(m);
  r.discard_ratio = static_cast<float>(o.discard_ratio);
  r.legrad_from = o.legrad_from;
  return r;
}

// Before any input: --class needs a classifier that has the class, --legrad-from a layer the
// model has. One line each, exit 2 (run_reporting_errors).
void check_gradient_options(const VitModel& model, const ForwardCommandOptions& o) {
  if (!o.class_index) return;
  const std::string c = std::to_string(*o.class_index);
  if (model.w_head.size() == 0)
    throw Error("--class " + c + ": " + o.model.file + " has no classifier: there is no class logit to take the gradient of" +
                no_classifier_note(model));
  const auto classes = static_cast<int>(model.w_head.rows());
  if (*o.class_index >= classes)
    throw Error(fmt::format("--class {}: the model has {} classes, 0…{}", c, classes, classes - 1));
  const int layers = model.n_layers();
  const bool legrad = std::find(o.methods.begin(), o.methods.end(), RelevanceMethod::legrad) != o.methods.end();
  if (legrad && o.legrad_from >= layers)  // −K past the first layer means every layer (relevance.hpp)
    throw Error(fmt::format("--legrad-from {}: the model has layers 0…{} (negative values count from the end)",
                            o.legrad_from, layers - 1));
}

}  // namespace

int run_forward(const ForwardCommandOptions& o, int verbosity) {
  const pipeline::ForwardRequest request = forward_request(o);
  pipeline::check_forward_outputs(request);
  const io::OpenedModel opened = open_model(o.model, verbosity);  // `forward` needs --model (check_forward)
  check_gradient_options(opened.model, o);
  pipeline::prepare_output_folder(request.output);
  pipeline::set_library_threads(o.threads > 0 ? o.threads
                                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
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
