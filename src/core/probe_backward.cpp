#include "probe_backward.hpp"

#include <cmath>
#include <string>

#include "error.hpp"
#include "gemm.hpp"
#include "vit_backward.hpp"

namespace vitattn {
namespace {

// pooled = y + fc2(GELU(fc1(LN(y)))): d_pooled (1, d) → ∂/∂y (1, d), the residual's share plus the MLP's.
Matrix mlp_backward(const VitModel& model, const ProbeTape& tape, const Matrix& d_pooled) {
  const ProbeHead& p = model.probe_head;
  Matrix d_hidden(1, p.w_fc2.cols());
  // d_pooled (1, d) · w_fc2 (d, d_mlp) → ∂GELU(h) (1, d_mlp)
  gemm_ab(d_hidden, d_pooled, p.w_fc2);
  gelu_backward_inplace(d_hidden, tape.pre_gelu, model.gelu);  // → ∂h
  Matrix d_norm(1, p.w_fc1.cols());
  // ∂h (1, d_mlp) · w_fc1 (d_mlp, d) → ∂LN(y) (1, d)
  gemm_ab(d_norm, d_hidden, p.w_fc1);
  Matrix d_y = d_pooled;  // the residual path
  layer_norm_backward_add(tape.y, p.norm, model.eps, d_norm, d_y);
  return d_y;
}

}  // namespace

ProbeGradients probe_backward(const VitModel& model, const Matrix& tokens, const RowVector& d_pooled) {
  if (!model.probe_head.present()) throw Error("the model has no probe head to take gradients through");
  if (tokens.cols() != model.d_model())
    throw Error("the probe reads rows of " + std::to_string(model.d_model()) + " values, given " +
                std::to_string(tokens.cols()));
  ProbeTape tape;
  const ProbePooling forward = probe_pooling(model, tokens, &tape);
  return probe_backward(model, forward, tape, d_pooled);
}

ProbeGradients probe_backward(const VitModel& model, const ProbePooling& forward, const ProbeTape& tape,
                              const RowVector& d_pooled) {
  const ProbeHead& p = model.probe_head;
  if (!p.present()) throw Error("the model has no probe head to take gradients through");
  const Eigen::Index d = model.d_model(), n = tape.k.rows(), d_head = d / model.n_heads;
  if (d_pooled.size() != d)
    throw Error("the gradient at the probe's pooled row has " + std::to_string(d_pooled.size()) + " values, the row " +
                std::to_string(d));
  const Matrix d_y = mlp_backward(model, tape, Matrix(d_pooled));  // (1, d)
  Matrix d_heads(1, d);
  // d_y (1, d) · w_out (d, d) → ∂(heads' outputs) (1, d)
  gemm_ab(d_heads, d_y, p.w_out);
  const float s = 1.0f / std::sqrt(static_cast<float>(d_head));
  Matrix d_k(n, d), d_v(n, d), d_s, transposed;
  ProbeGradients out;
  for (int h = 0; h < model.n_heads; ++h) {
    const Matrix& a = forward.attention[static_cast<std::size_t>(h)];  // (1, n)
    const Eigen::Index c = h * d_head;
    const auto d_o = d_heads.middleCols(c, d_head);                    // (1, d_head)
    Matrix d_a(1, n);
    // d_o (1, d_head) · v_hᵀ (d_head, n) → ∂a_h (1, n)
    gemm_abt(d_a, d_o, tape.v.middleCols(c, d_head));
    // a_hᵀ (n, 1) · d_o (1, d_head) → ∂v_h (n, d_head)
    transposed = a.transpose();
    gemm_ab(d_v.middleCols(c, d_head), transposed, d_o);
    softmax_backward(a, d_a, d_s);  // ∂(scores) (1, n)
    // s·∂Sᵀ (n, 1) · q_h (1, d_head) → ∂k_h (n, d_head)
    transposed = d_s.transpose();
    gemm_ab(d_k.middleCols(c, d_head), transposed, tape.q.middleCols(c, d_head), s);
    out.d_attention.push_back(std::move(d_a));
  }
  out.attention = forward.attention;
  out.d_tokens.resize(n, d);
  // ∂k (n, d) · W_K (d, d) + ∂v (n, d) · W_V (d, d) → ∂tokens (n, d)
  gemm_ab(out.d_tokens, d_k, p.w_qkv.middleRows(d, d));
  gemm_ab(out.d_tokens, d_v, p.w_qkv.middleRows(2 * d, d), 1.0f, Accumulate::yes);
  return out;
}

}  // namespace vitattn
