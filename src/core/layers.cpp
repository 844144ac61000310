#include "layers.hpp"

#include <cmath>

#include "gemm.hpp"
#include "parallel_rows.hpp"
#include "vector_math.hpp"

namespace vitattn {

Matrix layer_norm(const Matrix& x, const LayerNorm& norm, float eps) {
  Matrix y;
  layer_norm_into(x, norm, eps, y);
  return y;
}

void layer_norm_into(const Matrix& x, const LayerNorm& norm, float eps, Matrix& y) {
  y.resize(x.rows(), x.cols());
  // rows [begin, end) of x (n_tokens, d_model) → the same rows of y; one thread per range
  parallel_rows(x.rows(), x.cols(),
                [&](Eigen::Index begin, Eigen::Index end) { layer_norm_rows(x, norm, eps, y, begin, end); });
}

void layer_norm_rows(const Matrix& x, const LayerNorm& norm, float eps, Matrix& y, Eigen::Index begin,
                     Eigen::Index end) {
  for (Eigen::Index i = begin; i < end; ++i) {
    const auto row = x.row(i).array();
    const auto [mean, inv_std] = layer_norm_statistics(row, eps);
    y.row(i).array() = (row - mean) * inv_std * norm.weight.array() + norm.bias.array();
  }
}

namespace {

// One row of n values, in place (vector_math.hpp: the same bytes whichever thread runs it).
void gelu_row(float* values, Eigen::Index n, Gelu kind) {
  if (kind == Gelu::erf) {
    erf_gelu_row(values, n);  // erf at the CPU's vector width (vector_math.hpp)
  } else if (kind == Gelu::quick) {
    quick_gelu_row(values, n);  // x·σ(1.702x), exp at the CPU's vector width (vector_math.hpp)
  } else {
    tanh_gelu_row(values, n);  // as x·σ(2y), exp at the CPU's vector width (vector_math.hpp)
  }
}

}  // namespace

void gelu_inplace(Matrix& x, Gelu kind) {
  // x (n_tokens, d_mlp): rows are independent, each done whole by one thread
  parallel_rows(x.rows(), x.cols(), [&](Eigen::Index begin, Eigen::Index end) { gelu_rows(x, kind, begin, end); });
}

void gelu_rows(Matrix& x, Gelu kind, Eigen::Index begin, Eigen::Index end) {
  for (Eigen::Index i = begin; i < end; ++i) gelu_row(x.row(i).data(), x.cols(), kind);
}

const char* gelu_name(Gelu kind) {
  switch (kind) {
    case Gelu::erf: return "erf";
    case Gelu::tanh: return "tanh";
    case Gelu::quick: return "quick";
  }
  return "?";
}

namespace {

// W: a view (packed per product) or a WeightMatrix (its panels kept): the same bytes.
template <class W>
void linear_into_any(const Matrix& x, const W& w, const RowVector& b, Matrix& y) {
  // y (n_tokens, d_out) = b on every row, then y += x (n_tokens, d_in) · wᵀ (d_in, d_out):
  // the bias is where each output's chain of multiply-adds starts.
  y.resize(x.rows(), w.rows());
  if (b.size() == 0) {
    gemm_abt(y, x, w);
    return;
  }
  for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) = b;  // a contiguous copy per row (replicate is scalar)
  gemm_abt(y, x, w, 1.0f, Accumulate::yes);
}

}  // namespace

Matrix linear(const Matrix& x, ConstMatrixView w, const RowVector& b) {
  Matrix y;
  linear_into_any(x, w, b, y);
  return y;
}

void linear_into(const Matrix& x, ConstMatrixView w, const RowVector& b, Matrix& y) { linear_into_any(x, w, b, y); }

Matrix linear_weight(const Matrix& x, const WeightMatrix& w, const RowVector& b) {
  Matrix y;
  linear_into_any(x, w, b, y);
  return y;
}

void linear_into_weight(const Matrix& x, const WeightMatrix& w, const RowVector& b, Matrix& y) {
  linear_into_any(x, w, b, y);
}

}  // namespace vitattn
