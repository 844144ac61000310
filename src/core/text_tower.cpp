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

BlockRule TextTower::block_rule() const {
  BlockRule rule;
  rule.n_heads = n_heads;
  rule.eps = eps;
  rule.gelu = gelu;
  rule.scale = true;
  rule.causal = mask == TextMask::causal;
  return rule;
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

std::pair<int, int> word_span(const TextTower& t, const std::vector<std::int32_t>& ids) {
  if (ids.empty()) return {0, 0};
  if (t.pooling == TextPooling::end_of_text) return {1, std::max(1, end_of_text_position(ids))};
  const auto end = std::find(ids.begin(), ids.end(), ids.back());  // the first "</s>"
  return {0, static_cast<int>(end - ids.begin())};
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

namespace {

void check_ids(const TextTower& t, const std::vector<std::int32_t>& ids) {
  if (static_cast<int>(ids.size()) != t.context())
    throw Error("text: " + std::to_string(ids.size()) + " token ids, expected the context's " + std::to_string(t.context()));
  for (std::int32_t id : ids)
    if (id < 0 || id >= t.vocabulary())
      throw Error("text: token id " + std::to_string(id) + " is outside the text tower's vocabulary of " +
                  std::to_string(t.vocabulary()));
}

// The first row at or after `row` whose first float, in a matrix `width` floats wide, sits a
// multiple of 16 floats (64 bytes, the widest SIMD register) from row 0. A text's rows start
// there in a batch, so each of its rows has the alignment it has alone: Eigen's row sums (the
// LayerNorms' means and variances) split a row into a scalar head and vector packets by the
// row's address, and a different split would round differently.
Eigen::Index aligned_row(Eigen::Index row, Eigen::Index width) {
  constexpr Eigen::Index kFloats = 16;
  while ((row * width) % kFloats != 0) ++row;
  return row;
}

// The texts' rows stacked (n_rows, W), each text at its sequence: token_embedding[ids] +
// positional_embedding[0…n) on its n computed rows (computed_length); the rows between the
// texts are zeros.
Matrix embed_texts(const TextTower& t, const std::vector<std::vector<std::int32_t>>& texts,
                   std::vector<Sequence>& sequences) {
  Eigen::Index rows = 0;
  for (const auto& ids : texts) {
    const Eigen::Index begin = aligned_row(rows, t.width());
    sequences.push_back({begin, computed_length(t, ids)});
    rows = begin + sequences.back().length;
  }
  Matrix x = Matrix::Zero(rows, t.width());
  for (std::size_t i = 0; i < texts.size(); ++i)
    for (Eigen::Index p = 0; p < sequences[i].length; ++p)
      x.row(sequences[i].begin + p) =
          t.token_embedding.row(texts[i][static_cast<std::size_t>(p)]) + t.positional_embedding.row(p);
  return x;
}

void require_finite(const Matrix& x, const std::vector<Sequence>& sequences, int layer) {
  for (const Sequence& s : sequences)
    if (!x.middleRows(s.begin, s.length).allFinite()) non_finite(layer);
}

// The texts through the blocks, then each one's pooled row through the final norm and the projection.
// A tape is for one text (the backward reads one sequence).
std::vector<TextResult> encode(const TextTower& t, const std::vector<std::vector<std::int32_t>>& texts,
                               bool keep_attention, ForwardTape* tape) {
  for (const auto& ids : texts) check_ids(t, ids);
  if (texts.empty()) return {};
  const BlockRule rule = t.block_rule();
  BlockBuffers buf;
  Matrix x = embed_texts(t, texts, buf.sequences);  // (n_rows, W), updated in place by every block
  std::vector<TextResult> out(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    out[i].length = static_cast<int>(buf.sequences[i].length);
    if (keep_attention) out[i].attention.resize(t.blocks.size());
  }
  if (tape) tape->blocks.resize(t.blocks.size());
  std::vector<Matrix> layer;  // [text·H + head] this layer's probabilities
  const auto heads = static_cast<std::size_t>(t.n_heads);
  for (std::size_t l = 0; l < t.blocks.size(); ++l) {
    BlockTape* record = tape ? &tape->blocks[l] : nullptr;
    std::vector<Matrix>* probabilities = record ? &record->attention : keep_attention ? &layer : nullptr;
    if (probabilities) probabilities->clear();
    run_block(rule, t.blocks[l], x, buf, probabilities, false, record);
    require_finite(x, buf.sequences, static_cast<int>(l));
    if (!keep_attention) continue;
    for (std::size_t i = 0; i < texts.size(); ++i)  // copied from a tape, moved from `layer`
      for (std::size_t h = 0; h < heads; ++h)
        out[i].attention[l].push_back(record ? (*probabilities)[i * heads + h] : std::move((*probabilities)[i * heads + h]));
  }
  if (tape) tape->x_out = x;
  // Each text's ln_final(x[pooled]) (1, W) alone (a row of its own, as when encoded alone), then all
  // of them (n_texts, W) · projectionᵀ (W, E) → (n_texts, E): one product.
  Matrix pooled(static_cast<Eigen::Index>(texts.size()), t.width());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const Sequence& s = buf.sequences[i];
    const Eigen::Index row = s.begin + pooled_position(t, texts[i]);
    pooled.row(static_cast<Eigen::Index>(i)) = layer_norm(Matrix(x.row(row)), t.final_norm, t.eps);
  }
  const Matrix projected = linear(pooled, t.w_projection, t.b_projection);  // + the head's bias (SigLIP)
  for (std::size_t i = 0; i < texts.size(); ++i) {
    out[i].embedding = l2_normalized(RowVector(projected.row(static_cast<Eigen::Index>(i))));
    if (!out[i].embedding.allFinite()) non_finite(t.n_layers() - 1);
  }
  return out;
}

}  // namespace

TextResult encode_text(const TextTower& t, const std::vector<std::int32_t>& ids, bool keep_attention, ForwardTape* tape) {
  return std::move(encode(t, {ids}, keep_attention, tape).front());
}

std::vector<TextResult> encode_texts(const TextTower& t, const std::vector<std::vector<std::int32_t>>& texts,
                                     bool keep_attention) {
  return encode(t, texts, keep_attention, nullptr);
}

}  // namespace vitattn
