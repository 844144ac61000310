#pragma once
// `vitattn forward` as a pipeline step: a model's encoder on preprocessed tensors (.npy of
// [3, H, W] or [N, 3, H, W]), every layer's attention, the class token's features and the
// logits written as .npy, for checking against other implementations (PyTorch, the model's
// original code) on exactly the same input. No CLI, no logging: results come back as data.
//
// For each input x.npy, in the output folder:
//   x_attention.npy  [N, layers, heads, T, T]
//   x_features.npy   [N, width]   the class token's row after the last block
//   x_logits.npy     [N, classes] only when the model has a classifier
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/vit.hpp"

namespace vitattn::pipeline {

struct ForwardRequest {
  std::vector<std::filesystem::path> inputs;  // .npy files
  std::filesystem::path output;               // the folder the outputs go to
  std::filesystem::path model_file;           // the weights read, never replaced; empty: none
  bool scale = true;                          // attention scores divided by √d_head
};

// What forward writes for one input, named in one place.
struct ForwardOutputs {
  std::filesystem::path attention, features, logits;
};
ForwardOutputs forward_outputs(const std::filesystem::path& output, const std::filesystem::path& input);

// Before any work: no output replaces an input (a tensor, the model file) or another input's
// output. Throws Error naming the input and the file.
void check_forward_outputs(const ForwardRequest& request);

struct ForwardInputResult {
  std::filesystem::path input;
  std::size_t images = 0;  // the N of the input
  ForwardOutputs written;  // logits empty when the model has no classifier
  std::string error;       // empty: done; else the one-line message, nothing written for it
};

// Each input in turn; one that fails (not [N, 3, H, W], not a multiple of the patch size, a
// non-finite value, an unwritable output) is said in its result and the others go on. The
// output folder must exist (prepare_output_folder), and the model is one open_model gave
// (validated there, once).
std::vector<ForwardInputResult> forward_files(const VitModel& model, const ForwardRequest& request);

}  // namespace vitattn::pipeline
