#include "text_relevance.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "error.hpp"
#include "gemm.hpp"
#include "relevance.hpp"
#include "vit_backward.hpp"

namespace vitattn {

RowVector text_logit_gradient(const TextTower& t, const RowVector& pooled, const RowVector& u) {
  if (u.size() != t.d_embed())
    throw Error("the image embedding is " + std::to_string(u.size()) + " wide, the text embedding " +
                std::to_string(t.d_embed()));
  const Matrix x = pooled;                                           // (1, W)
  const Matrix e = linear(layer_norm(x, t.final_norm, t.eps), t.w_projection, t.b_projection);  // (1, E)
  const float norm = e.norm();
  const RowVector e_hat = e.row(0) / norm;
  // y = s·(u · ê), ê = e/|e|: ∂y/∂ê = s·u, ∂y/∂e = (∂y/∂ê − (∂y/∂ê · ê)·ê) / |e|
  const RowVector d_e_hat = std::exp(t.logit_scale) * u;
  const Matrix d_e = (d_e_hat - d_e_hat.dot(e_hat) * e_hat) / norm;  // (1, E)
  Matrix d_normed(1, t.width());
  // ∂e (1, E) · projection (E, W) → ∂ln_final(x) (1, W)
  gemm_ab(d_normed, d_e, t.w_projection);
  Matrix d_x = Matrix::Zero(1, t.width());
  layer_norm_backward_add(x, t.final_norm, t.eps, d_normed, d_x);
  return d_x.row(0);
}

Matrix relevance_by_start_layer(const TextTower& t, const ForwardTape& tape, int pooled_row, const RowVector& d_pooled,
                                int first_layer) {
  const int layers = t.n_layers();
  const Eigen::Index n = tape.x_out.rows();
  if (static_cast<int>(tape.blocks.size()) != layers)
    throw Error("the text's tape has " + std::to_string(tape.blocks.size()) + " blocks, the tower " +
                std::to_string(layers));
  if (pooled_row < 0 || pooled_row >= n)
    throw Error("pooled row " + std::to_string(pooled_row) + " is not one of the text's " + std::to_string(n) +
                " positions");
  if (first_layer < 0 || first_layer >= layers)
    throw Error("start layer " + std::to_string(first_layer) + " is not one of the tower's " + std::to_string(layers) +
                " layers");
  Matrix d_x = Matrix::Zero(n, t.width());  // ∂y/∂(the stream after block l), from the last block's output
  d_x.row(pooled_row) = d_pooled;
  Matrix r = Matrix::Zero(1, n);  // (1, n) R's pooled row, from I's
  r(0, pooled_row) = 1.0f;
  Matrix rows = Matrix::Zero(layers, n);
  const BlockRule rule = t.block_rule();
  BlockGradients g;
  BackwardBuffers buf;
  for (int l = layers - 1; l >= first_layer; --l) {
    const BlockTape& block = tape.blocks[static_cast<std::size_t>(l)];
    block_backward(rule, t.blocks[static_cast<std::size_t>(l)], block, d_x, g, buf);
    chefer_row_step(r, block.attention, g.d_attention);
    rows.row(l) = r;
    std::swap(d_x, g.d_input);
  }
  return rows;
}

int text_start_layer(int start_layer, int n_layers) {
  return first_layer(start_layer, n_layers, "the text's start layer");
}

RowVector word_relevance(const TextTower& t, const std::vector<std::int32_t>& ids, const ForwardTape& tape,
                         const RowVector& u, int start_layer) {
  const int pooled = pooled_position(t, ids);
  if (pooled >= tape.x_out.rows()) throw Error("the text's tape does not hold its pooled position");
  const int first = text_start_layer(start_layer, t.n_layers());
  const Matrix rows = relevance_by_start_layer(t, tape, pooled, text_logit_gradient(t, tape.x_out.row(pooled), u), first);
  const auto [begin, end] = word_span(t, ids);
  if (end <= begin) return RowVector();  // no word
  return rows.row(first).segment(begin, end - begin);
}

}  // namespace vitattn
