#include "attention.hpp"

#include <cmath>
#include <string>

#include "error.hpp"
#include "parallel_rows.hpp"
#include "vector_math.hpp"

namespace vitattn {
void softmax_rows(Matrix& scores) {
  // scores (n_queries, n_keys): each row normalised on its own, a range of rows per thread
  parallel_rows(scores.rows(), scores.cols(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) softmax_row(scores.row(i).data(), scores.cols());  // vector_math.hpp
  });
}

Matrix causal_mask(Eigen::Index n) {
  Matrix mask = Matrix::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = i + 1; j < n; ++j) mask(i, j) = kMasked;
  return mask;
}

Attention scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v,
                                       const Matrix& mask, bool scale) {
  if (q.cols() != k.cols() || k.rows() != v.rows())
    throw Error("attention: shapes do not fit: q is [" + std::to_string(q.rows()) + ", " +
                std::to_string(q.cols()) + "], k is [" + std::to_string(k.rows()) + ", " +
                std::to_string(k.cols()) + "], v is [" + std::to_string(v.rows()) + ", " +
                std::to_string(v.cols()) + "]");
  if (mask.size() != 0 && (mask.rows() != q.rows() || mask.cols() != k.rows()))
    throw Error("attention: mask is [" + std::to_string(mask.rows()) + ", " +
                std::to_string(mask.cols()) + "], expected [" + std::to_string(q.rows()) + ", " +
                std::to_string(k.rows()) + "]");

  const float d_k = static_cast<float>(q.cols());
  Attention a;
  // q (n_q, d_k) · kᵀ (d_k, n_k) → scores (n_q, n_k)
  a.weights.noalias() = q * k.transpose();
  // Dot products of d_k unit-variance terms have variance d_k; 1/√d_k brings it back to 1
  // so softmax is not pushed into its flat, one-hot tails.
  if (scale) a.weights *= 1.0f / std::sqrt(d_k);
  if (mask.size() != 0) a.weights += mask;
  softmax_rows(a.weights);
  // weights (n_q, n_k) · v (n_k, d_v) → output (n_q, d_v)
  a.output.noalias() = a.weights * v;
  return a;
}

}  // namespace vitattn
