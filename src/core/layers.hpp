#pragma once
// The element-wise and row-wise layers of a transformer block, each a small function.
#include "tensor.hpp"

namespace vitattn {

struct LayerNorm {
  RowVector weight;  // (d_model) γ; empty means "no such norm"
  RowVector bias;    // (d_model) β
  bool present() const { return weight.size() > 0; }
};

// x (n_tokens, d_model) → (x − mean) / √(var + eps) · γ + β, row by row (biased variance, as torch).
Matrix layer_norm(const Matrix& x, const LayerNorm& norm, float eps);
// The same into `y` (resized when its shape differs), so a forward can reuse one buffer.
void layer_norm_into(const Matrix& x, const LayerNorm& norm, float eps, Matrix& y);

// The MLP's activation: exact GELU, its tanh approximation, or OpenAI CLIP's QuickGELU.
enum class Gelu { erf, tanh, quick };

// In place: exact GELU ½x(1 + erf(x/√2)), its tanh approximation
// ½x(1 + tanh(√(2/π)(x + 0.044715x³))) used by some checkpoints (SigLIP, tintn), or QuickGELU
// x·σ(1.702x) (OpenAI CLIP's model.py, Hugging Face's "quick_gelu").
void gelu_inplace(Matrix& x, Gelu kind);
// "erf", "tanh", "quick": what -v prints and the overrides take.
const char* gelu_name(Gelu kind);

// x (n_tokens, d_in) · wᵀ (d_in, d_out) + b → (n_tokens, d_out); b may be empty (no bias).
Matrix linear(const Matrix& x, ConstMatrixView w, const RowVector& b);
// The same into `y` (resized when its shape differs). The bias is written first and the
// product added onto it (gemm.hpp): no second pass for the bias.
void linear_into(const Matrix& x, ConstMatrixView w, const RowVector& b, Matrix& y);

}  // namespace vitattn
