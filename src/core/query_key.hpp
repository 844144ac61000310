#pragma once
// The first block's queries and keys of one image, for the report's step-by-step panel
// (q·k, ÷√d_head, eᶻ, the row sum, the weight), computed as forward's first block does.
#include "image_tensor.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

struct QueryKey {
  Matrix q;  // (n_tokens, d_head)
  Matrix k;  // (n_tokens, d_head)
};

// Meant for a one-head model (the seeded head: one attention-only block); with more heads it
// returns head 0's. image (3, grid_h·P, grid_w·P) → embed → [norm1] → qkv = x·W_qkvᵀ + b_qkv,
// rows [W_Q; W_K; W_V] → q = qkv[:, 0:d_head], k = qkv[:, d_attn:d_attn + d_head], the patches' rotated
// with RoPE when the model has it.
QueryKey query_key(const VitModel& model, const ImageTensor& image);

}  // namespace vitattn
