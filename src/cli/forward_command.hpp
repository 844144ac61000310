#pragma once
// `vitattn forward`: a checkpoint's encoder on preprocessed tensors, every layer's attention,
// the class token's features and the logits written as .npy, for checking against other
// implementations (PyTorch, the model's original code) on exactly the same input.
#include "forward_options.hpp"

namespace vitattn::cli {

int run_forward(const ForwardCommandOptions& options, int verbosity);  // exit status

}  // namespace vitattn::cli
