#pragma once
// The element-wise and row-wise layers of a transformer block, each a small function.
#include <cmath>
#include <concepts>

#include "tensor.hpp"
#include "weight_matrix.hpp"

namespace vitattn {

struct LayerNorm {
  RowVector weight;  // (d_model) γ; empty means "no such norm"
  RowVector bias;    // (d_model) β
  bool present() const { return weight.size() > 0; }
};

// What a LayerNorm takes of one row (an Eigen array of d values): its mean and 1/√(var + eps),
// var the biased variance, in this order of float operations. The forward and both backwards
// (vit_backward.cpp, lrp.cpp) take them from here, so they see the same bits.
struct RowStatistics {
  float mean = 0.0f;
  float inv_std = 0.0f;
};
template <typename Row>
RowStatistics layer_norm_statistics(const Row& row, float eps) {
  const float inv_d = 1.0f / static_cast<float>(row.size());
  const float mean = row.sum() * inv_d;
  const float var = (row - mean).square().sum() * inv_d;
  return {mean, 1.0f / std::sqrt(var + eps)};
}

// x (n_tokens, d_model) → (x − mean) / √(var + eps) · γ + β, row by row (biased variance, as torch).
Matrix layer_norm(const Matrix& x, const LayerNorm& norm, float eps);
// The same into `y` (resized when its shape differs), so a forward can reuse one buffer.
void layer_norm_into(const Matrix& x, const LayerNorm& norm, float eps, Matrix& y);
// Rows [begin, end) of layer_norm_into, on the calling thread; y is already x's shape. Each row
// is computed by the same code as there, so a step that owns a block of rows gets its bytes.
void layer_norm_rows(const Matrix& x, const LayerNorm& norm, float eps, Matrix& y, Eigen::Index begin,
                     Eigen::Index end);

// The MLP's activation: exact GELU, its tanh approximation, or OpenAI CLIP's QuickGELU.
enum class Gelu { erf, tanh, quick };

// In place: exact GELU ½x(1 + erf(x/√2)), its tanh approximation
// ½x(1 + tanh(√(2/π)(x + 0.044715x³))) used by some checkpoints (SigLIP, tintn), or QuickGELU
// x·σ(1.702x) (OpenAI CLIP's model.py, Hugging Face's "quick_gelu").
void gelu_inplace(Matrix& x, Gelu kind);
// Rows [begin, end) of gelu_inplace, on the calling thread (the same code per row).
void gelu_rows(Matrix& x, Gelu kind, Eigen::Index begin, Eigen::Index end);
// "erf", "tanh", "quick": what -v prints and the overrides take.
const char* gelu_name(Gelu kind);

// x (n_tokens, d_in) · wᵀ (d_in, d_out) + b → (n_tokens, d_out); b may be empty (no bias).
Matrix linear(const Matrix& x, ConstMatrixView w, const RowVector& b);
// The same into `y` (resized when its shape differs). The bias is written first and the
// product added onto it (gemm.hpp): no second pass for the bias.
void linear_into(const Matrix& x, ConstMatrixView w, const RowVector& b, Matrix& y);
// The same with w a model's weight, whose GEMM panels are packed once and kept (gemm.hpp).
// Templates only so that a Matrix w, which converts to both, still picks the view.
Matrix linear_weight(const Matrix& x, const WeightMatrix& w, const RowVector& b);
void linear_into_weight(const Matrix& x, const WeightMatrix& w, const RowVector& b, Matrix& y);
template <class W>
  requires std::same_as<W, WeightMatrix>
Matrix linear(const Matrix& x, const W& w, const RowVector& b) {
  return linear_weight(x, w, b);
}
template <class W>
  requires std::same_as<W, WeightMatrix>
void linear_into(const Matrix& x, const W& w, const RowVector& b, Matrix& y) {
  linear_into_weight(x, w, b, y);
}

}  // namespace vitattn
