#include "text_tower.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention.hpp"
#include "error.hpp"
#include "gemm.hpp"
#include "vit_head.hpp"

namespace vitattn {
namespace {

template <class M>
void expect(const std::string& source, const std::string& what, const M& m, Eigen::Index rows, Eigen::Index cols) {
  if (m.rows() != rows || m.cols() != cols)
    throw Error(source + ": text tower " + what + " is [" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) +
                "], expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

void expect_row(const std::string& source, const std::string& what, const RowVector& v, Eigen::Index n, bool optional) {
  if ((optional && v.size() == 0) || v.size() == n) return;
  throw Error(source + ": text tower " + what + " has " + std::to_string(v.size()) + " values, expected " +
              std::to_string(n));
}

// Scores above the diagonal masked: token i attends to tokens 0…i (clip/model.py build_attention_mask).
void mask_future(Matrix& scores) {
  for (Eigen::Index i = 0; i + 1 < scores.rows(); ++i) scores.row(i).tail(scores.cols() - i - 1).setConstant(kMasked);
}

// xn (n, W) → heads (n, W): each head's softmax(q·kᵀ/√d_head + the tower's mask)·v side by
// side; each head's probabilities (n, n) appended to `attention` when it is given.
void text_attention(const TextTower& t, const EncoderBlock& b, const Matrix& xn, Matrix& heads,
                    std::vector<Matrix>* attention) {
  const Eigen::Index w = t.width(), d_head = w / t.n_heads, n = xn.rows();
  const Matrix qkv = linear(xn, b.w_qkv, b.b_qkv);  // (n, 3·W) = [q | k | v]
  heads.resize(n, w);
  Matrix scores(n, n);
  for (int h = 0; h < t.n_heads; ++h) {
    const auto q = qkv.middleCols(h * d_head, d_head);          // (n, d_head)
    const auto k = qkv.middleCols(w + h * d_head, d_head);      // (n, d_head)
    const auto v = qkv.middleCols(2 * w + h * d_head, d_head);  // (n, d_head)
    // q (n, d_head) · kᵀ (d_head, n) / √d_head → scores (n, n)
    gemm_abt(scores, q, k, 1.0f / std::sqrt(static_cast<float>(d_head)));
    if (t.mask == TextMask::causal) mask_future(scores);
    softmax_rows(scores);
    // A (n, n) · v (n, d_head) → head output (n, d_head)
    gemm_ab(heads.middleCols(h * d_head, d_head), scores, v);
    if (attention) attention->push_back(scores);
  }
}

// x (n, W) ← x + Attn(LN1(x)), then x + MLP(LN2(x)), the image tower's block with the tower's mask.
void run_text_block(const TextTower& t, const EncoderBlock& b, Matrix& x, std::vector<Matrix>* attention) {
  Matrix heads;  // (n, W)
  text_attention(t, b, layer_norm(x, b.norm1, t.eps), heads, attention);
  x += linear(heads, b.w_proj, b.b_proj);  // heads (n, W) · w_projᵀ (W, W) + b
  Matrix hidden = linear(layer_norm(x, b.norm2, t.eps), b.w_fc1, b.b_fc1);  // (n, d_mlp)
  gelu_inplace(hidden, t.gelu);
  x += linear(hidden, b.w_fc2, b.b_fc2);  // hidden (n, d_mlp) · w_fc2ᵀ (d_mlp, W) + b
}

[[noreturn]] void non_finite(int layer) {
  throw Error("the text tower's activations became non-finite (NaN or infinity) by layer " + std::to_string(layer));
}

}  // namespace

void TextTower::validate(const std::string& source) const {
  const Eigen::Index w = width();
  if (w <= 0 || vocabulary() <= 0 || context() < 2) throw Error(source + ": the text tower has no token or position embedding");
  expect(source, "positional_embedding", positional_embedding, context(), w);
  if (blocks.empty()) throw Error(source + ": the text tower has no blocks");
  if (n_heads <= 0 || w % n_heads != 0)
    throw Error(source + ": " + std::to_string(n_heads) + " text heads do not divide the text width " + std::to_string(w));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const EncoderBlock& b = blocks[i];
    const std::string at = "block " + std::to_string(i) + " ";
    expect_row(source, at + "ln_1", b.norm1.weight, w, false);
    expect_row(source, at + "ln_1 bias", b.norm1.bias, w, false);
    expect(source, at + "qkv weight", b.w_qkv, 3 * w, w);
    expect_row(source, at + "qkv bias", b.b_qkv, 3 * w, true);
    expect(source, at + "out_proj weight", b.w_proj, w, w);
    expect_row(source, at + "out_proj bias", b.b_proj, w, true);
    expect_row(source, at + "ln_2", b.norm2.weight, w, false);
    expect_row(source, at + "ln_2 bias", b.norm2.bias, w, false);
    expect(source, at + "mlp fc1 weight", b.w_fc1, b.w_fc1.rows(), w);
    expect_row(source, at + "mlp fc1 bias", b.b_fc1, b.w_fc1.rows(), true);
    expect(source, at + "mlp fc2 weight", b.w_fc2, w, b.w_fc1.rows());
    expect_row(source, at + "mlp fc2 bias", b.b_fc2, w, true);
  }
  expect_row(source, "ln_final", final_norm.weight, w, false);
  expect_row(source, "ln_final bias", final_norm.bias, w, false);
  expect(source, "text_projection (transposed)", w_projection, w_projection.rows(), w);
  if (w_projection.rows() <= 0) throw Error(source + ": the text tower has no text_projection");
  expect_row(source, "head bias", b_projection, w_projection.rows(), true);
  if (!std::isfinite(logit_scale)) throw Error(source + ": logit_scale is not finite");
  if (!std::isfinite(logit_bias)) throw Error(source + ": logit_bias is not finite");
}

int end_of_text_position(const std::vector<std::int32_t>& ids) {
  return static_cast<int>(std::max_element(ids.begin(), ids.end()) - ids.begin());
}

int pooled_position(const TextTower& t, const std::vector<std::int32_t>& ids) {
  switch (t.pooling) {
    case TextPooling::end_of_text:
      return end_of_text_position(ids);
    case TextPooling::last:
      return static_cast<int>(ids.size()) - 1;
  }
  throw Error("unknown text pooling");
}

int computed_length(const TextTower& t, const std::vector<std::int32_t>& ids) {
  return t.mask == TextMask::causal ? pooled_position(t, ids) + 1 : static_cast<int>(ids.size());
}

Matrix image_text_logits(const TextTower& t, const Matrix& images, const Matrix& texts) {
  // images (N, E) · textsᵀ (E, n) → cosines (N, n), both sides unit rows
  Matrix logits = std::exp(t.logit_scale) * (images * texts.transpose());
  logits.array() += t.logit_bias;
  return logits;
}

Matrix image_text_probabilities(const TextTower& t, const Matrix& logits) {
  Matrix p = logits;
  switch (t.probabilities) {
    case ClassProbability::softmax:
      softmax_rows(p);
      return p;
    case ClassProbability::sigmoid:
      p = logits.unaryExpr([](float v) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v)))); });
      return p;
  }
  throw Error("unknown text probabilities");
}

TextResult encode_text(const TextTower& t, const std::vector<std::int32_t>& ids, bool keep_attention) {
  if (static_cast<int>(ids.size()) != t.context())
    throw Error("text: " + std::to_string(ids.size()) + " token ids, expected the context's " + std::to_string(t.context()));
  for (std::int32_t id : ids)
    if (id < 0 || id >= t.vocabulary())
      throw Error("text: token id " + std::to_string(id) + " is outside the text tower's vocabulary of " +
                  std::to_string(t.vocabulary()));
  TextResult out;
  const int pooled = pooled_position(t, ids);
  out.length = computed_length(t, ids);
  // x (n, W) = token_embedding[ids] + positional_embedding[0…n)
  Matrix x(out.length, t.width());
  for (int i = 0; i < out.length; ++i)
    x.row(i) = t.token_embedding.row(ids[static_cast<std::size_t>(i)]) + t.positional_embedding.row(i);
  if (keep_attention) out.attention.resize(t.blocks.size());
  for (std::size_t l = 0; l < t.blocks.size(); ++l) {
    run_text_block(t, t.blocks[l], x, keep_attention ? &out.attention[l] : nullptr);
    if (!x.allFinite()) non_finite(static_cast<int>(l));
  }
  // ln_final(x[pooled]) (1, W) · projectionᵀ (W, E) + bias → (1, E)
  const Matrix pooled_row = layer_norm(Matrix(x.row(pooled)), t.final_norm, t.eps);
  const Matrix projected = linear(pooled_row, t.w_projection, t.b_projection);
  out.embedding = l2_normalized(RowVector(projected.row(0)));
  if (!out.embedding.allFinite()) non_finite(t.n_layers() - 1);
  return out;
}

}  // namespace vitattn
