// LeGrad's text-target variants and the probe's backward for tests/oracle/test_legrad_text.py,
// which the CLI does not expose yet. Not the product: positional arguments, .npy in and out.
//
//   legrad_text_tool clip   MODEL IMAGE TEXT FIRST OUT                 legrad_clip_text
//   legrad_text_tool siglip MODEL IMAGE TEXT FIRST OUT [EMPTY THRESHOLD]  legrad_siglip_text
//   legrad_text_tool logit  MODEL IMAGE HEAD CLASS OUT_PREFIX
//
// IMAGE (3, H, W) float32, normalised; TEXT and EMPTY (d) float32; the maps (grid_h, grid_w) to
// OUT. `logit` gives the model HEAD (n_classes, d_model) as its classifier on the pooled row,
// then writes for class CLASS: OUT_PREFIX_final.npy ∂y/∂x_out (n_tokens, d_model) from
// logit_gradient, _probe.npy ∂y/∂(the probe's attention) (H, n_tokens) from pooled_row_backward
// (a probe model only), _attention.npy ∂y/∂A_l (L, H, n_tokens, n_tokens) from encoder_backward,
// and _chefer.npy, _grad_rollout.npy, _legrad.npy, _gradcam.npy from relevance_maps (the
// defaults: discard ratio 0, LeGrad from −2).
// Errors: "error: <message>" on standard error, exit 1.
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/legrad_text.hpp"
#include "core/relevance.hpp"
#include "core/vit_backward.hpp"
#include "model/open_model.hpp"
#include "tensors/npy.hpp"

namespace {

using namespace vitattn;
namespace fs = std::filesystem;

ImageTensor read_image(const fs::path& path) {
  const tensors::NpyArray a = tensors::read_npy(path);
  if (a.shape.size() != 3 || a.shape[0] != 3) throw Error(path.string() + ": expected (3, H, W)");
  ImageTensor x;
  x.height = static_cast<int>(a.shape[1]);
  x.width = static_cast<int>(a.shape[2]);
  x.chw = a.values;
  return x;
}

Matrix read_matrix(const fs::path& path) {
  const tensors::NpyArray a = tensors::read_npy(path);
  const auto rows = static_cast<Eigen::Index>(a.shape.size() == 2 ? a.shape[0] : 1);
  const auto cols = static_cast<Eigen::Index>(a.shape.back());
  return Eigen::Map<const Matrix>(a.values.data(), rows, cols);
}

// The image's forward with its tape, and its patch grid.
struct Run {
  ForwardTape tape;
  int grid_h = 0, grid_w = 0;
};

Run forward_with_tape(const VitModel& model, const ImageTensor& x) {
  Run run;
  ForwardOptions options;
  options.tape = &run.tape;
  forward(model, x, options);
  run.grid_h = x.height / model.patch_size;
  run.grid_w = x.width / model.patch_size;
  return run;
}

// The gradients of class c's logit, HEAD being the model's classifier.
void write_logit_gradients(VitModel model, const ImageTensor& x, const Matrix& head, int c, const std::string& prefix) {
  model.w_head = head;
  const Run run = forward_with_tape(model, x);
  tensors::write_npy(prefix + "_final.npy", logit_gradient(model, run.tape.x_out, c));
  if (model.pooling == Pooling::probe) {
    ProbeGradients probe;
    pooled_row_backward(model, run.tape.x_out, model.w_head.row(c), &probe);
    Matrix stacked(static_cast<Eigen::Index>(probe.d_attention.size()), probe.d_attention.front().cols());
    for (std::size_t h = 0; h < probe.d_attention.size(); ++h)
      stacked.row(static_cast<Eigen::Index>(h)) = probe.d_attention[h];
    tensors::write_npy(prefix + "_probe.npy", stacked);
  }
  const std::vector<RelevanceMap> methods{&RelevanceMaps::chefer, &RelevanceMaps::grad_rollout, &RelevanceMaps::legrad,
                                          &RelevanceMaps::gradcam};
  const std::vector<const char*> names{"chefer", "grad_rollout", "legrad", "gradcam"};
  RelevanceSettings settings;
  settings.class_index = c;
  const std::vector<Matrix> maps = relevance_maps(model, run.tape, methods, settings, run.grid_h, run.grid_w);
  for (std::size_t i = 0; i < maps.size(); ++i) tensors::write_npy(prefix + "_" + names[i] + ".npy", maps[i]);
  const auto n = static_cast<std::uint64_t>(run.tape.x_out.rows());
  const auto layers = static_cast<std::uint64_t>(model.n_layers()), heads = static_cast<std::uint64_t>(model.n_heads);
  std::vector<float> all(layers * heads * n * n);
  encoder_backward(model, run.tape, c, true, [&](int l, const BlockGradients& g) {
    for (std::size_t h = 0; h < heads; ++h)
      Eigen::Map<Matrix>(all.data() + (static_cast<std::size_t>(l) * heads + h) * n * n, static_cast<Eigen::Index>(n),
                         static_cast<Eigen::Index>(n)) = g.d_attention[h];
  });
  tensors::write_npy(prefix + "_attention.npy", all.data(), {layers, heads, n, n});
}

int run(const std::vector<std::string>& args) {
  if (args.size() < 6) throw Error("usage: legrad_text_tool clip|siglip|logit MODEL IMAGE TEXT|HEAD FIRST|CLASS OUT …");
  model::ModelRequest request;
  request.source = args[1];
  const VitModel model = model::open_model(request).model;
  const ImageTensor x = read_image(args[2]);
  const Matrix third = read_matrix(args[3]);
  const int number = std::stoi(args[4]);
  if (args[0] == "logit") {
    write_logit_gradients(model, x, third, number, args[5]);
    return 0;
  }
  const Run r = forward_with_tape(model, x);
  const RowVector text = third.row(0);
  const TextLegradSettings settings{.first_layer = number, .scale = true};
  Matrix map;
  if (args[0] == "clip") {
    map = legrad_clip_text(model, r.tape, text, settings, r.grid_h, r.grid_w);
  } else if (args[0] == "siglip") {
    std::optional<EmptyPromptCorrection> correction;
    if (args.size() >= 8) correction = EmptyPromptCorrection{read_matrix(args[6]).row(0), std::stof(args[7])};
    map = legrad_siglip_text(model, r.tape, text, settings, correction, r.grid_h, r.grid_w);
  } else {
    throw Error("unknown mode " + args[0]);
  }
  tensors::write_npy(args[5], map);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
