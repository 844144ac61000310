#pragma once
// Scaled dot-product attention, one head: softmax(q·kᵀ/√d_k + mask)·v.
#include <limits>

#include "tensor.hpp"

namespace vitattn {

struct Attention {
  Matrix weights;  // (n_queries, n_keys), every row sums to 1
  Matrix output;   // (n_queries, d_v)
};

inline constexpr float kMasked = -std::numeric_limits<float>::infinity();

// Row-wise softmax, in place. Subtracting each row's maximum keeps exp() from
// overflowing; a row that is entirely masked (-inf) becomes all zeros.
void softmax_rows(Matrix& scores);

// Additive causal mask (n, n): 0 on and below the diagonal, -inf above it,
// so token i attends only to tokens 0..i.
Matrix causal_mask(Eigen::Index n);

// q (n_q, d_k), k (n_k, d_k), v (n_k, d_v); mask empty or (n_q, n_k).
// scale=false drops the 1/√d_k, to show why it is there.
Attention scaled_dot_product_attention(const Matrix& q, const Matrix& k, const Matrix& v,
                                       const Matrix& mask = Matrix(), bool scale = true);

}  // namespace vitattn
