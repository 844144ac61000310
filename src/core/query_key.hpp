#pragma once
// The single head's queries and keys of one image, for the report's step-by-step panel
// (q·k, ÷√d_k, eᶻ, the row sum, the weight), computed exactly as run_single_head does.
#include "image_tensor.hpp"
#include "model.hpp"
#include "tensor.hpp"

namespace vitattn {

struct QueryKey {
  Matrix q;  // (n_tokens, d_k)
  Matrix k;  // (n_tokens, d_k)
};

// image (3, S, S) → patchify → embed → q = x·W_qᵀ + b_q, k = x·W_kᵀ + b_k
QueryKey query_key(const SingleHeadModel& model, const ImageTensor& image);

}  // namespace vitattn
