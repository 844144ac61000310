#include "vit.hpp"

#include <cmath>
#include <optional>
#include <string>

#include "attention.hpp"
#include "error.hpp"
#include "gemm.hpp"
#include "gemm_bf16.hpp"
#include "normalization_limits.hpp"
#include "parallel_for.hpp"
#include "parallel_rows.hpp"
#include "patchify.hpp"
#include "pos_embed.hpp"
#include "rope.hpp"
#include "vit_head.hpp"

namespace vitattn {
namespace {

std::string dims(Eigen::Index rows, Eigen::Index cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

// The shape (and, unless the caller checked them already, the values) of each tensor.
struct Expect {
  const std::string& source;
  bool values;

  void operator()(const std::string& name, const WeightMatrix& m, Eigen::Index rows, Eigen::Index cols) const {
    if (m.rows() != rows || m.cols() != cols)
      throw Error(source + ": " + name + " is " + dims(m.rows(), m.cols()) + ", expected " + dims(rows, cols));
    if (values && !m.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  }

  void operator()(const std::string& name, const RowVector& v, Eigen::Index n, bool optional = false) const {
    if (optional && v.size() == 0) return;
    if (v.size() != n)
      throw Error(source + ": " + name + " is [" + std::to_string(v.size()) + "], expected [" + std::to_string(n) + "]");
    if (values && !v.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  }
};

}  // namespace

void VitModel::validate(const std::string& source, CheckValues values) const {
  const Expect expect{source, values == CheckValues::yes};
  if (patch_size <= 0) throw Error(source + ": patch size must be positive");
  const Eigen::Index d = d_model();
  if (d <= 0) throw Error(source + ": d_model must be positive");
  if (!(eps > 0.0f) || !std::isfinite(eps)) throw Error(source + ": LayerNorm eps must be positive");
  expect("patch embedding weight", w_patch, d, 3 * patch_size * patch_size);
  expect("patch embedding bias", b_patch, d, true);
  expect("class token", cls_token, d, pooling == Pooling::probe);  // SigLIP has none
  expect("distillation token", dist_token, d, true);
  expect("register tokens", register_tokens, register_tokens.rows(), register_tokens.rows() ? d : 0);
  if (rope.present()) {
    validate_rope(source);
  } else if (grid_h <= 0 || grid_w <= 0) {
    throw Error(source + ": position embeddings have " + std::to_string(pos_embed.rows()) +
                " rows, which is not a square patch grid (with or without a class position)");
  }
  const int with_dist = has_dist() ? 2 : 1;  // positions for the class (and distillation) token
  if (pos_prefix != 0 && pos_prefix != 1 && pos_prefix != with_dist && pos_prefix != first_patch_token())
    throw Error(source + ": position embeddings cover " + std::to_string(pos_prefix) + " leading tokens; expected 0, 1" +
                (has_dist() ? ", 2" : "") + " or " + std::to_string(first_patch_token()) + " (every leading token)");
  if (norm_pre.present() || norm_pre.bias.size() > 0) {
    expect("pre-block norm weight", norm_pre.weight, d);
    expect("pre-block norm bias", norm_pre.bias, d);
  }
  if (!rope.present()) expect("position embeddings", pos_embed, pos_prefix + Eigen::Index{grid_h} * grid_w, d);
  if (blocks.empty()) throw Error(source + ": no encoder blocks found");
  const Eigen::Index d_attn_ = blocks.front().w_qkv.rows() / 3;
  if (d_attn_ <= 0) throw Error(source + ": block 0 qkv weight has no rows");
  if (n_heads <= 0 || d_attn_ % n_heads != 0)
    throw Error(source + ": " + std::to_string(n_heads) + " heads do not divide " +
                (d_attn_ == d ? "d_model " : "the attention width ") + std::to_string(d_attn_));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const EncoderBlock& b = blocks[i];
    const std::string at = "block " + std::to_string(i) + " ";
    if (b.norm1.present() || b.norm1.bias.size() > 0) {
      expect(at + "norm1 weight", b.norm1.weight, d);
      expect(at + "norm1 bias", b.norm1.bias, d);
    }
    expect(at + "qkv weight", b.w_qkv, 3 * d_attn_, d);
    expect(at + "qkv bias", b.b_qkv, 3 * d_attn_, true);
    if (!b.projected()) {
      // The heads' outputs are the block's output: nothing after it can read a stream of another width.
      if (i + 1 != blocks.size() || b.has_mlp() || b.ls1.size() > 0 || b.b_proj.size() > 0 || final_norm.present() ||
          has_linear_head())
        throw Error(source + ": " + at + "has no attention output projection, so it must be the last block, "
                    "without MLP, final norm or classifier");
      continue;
    }
    expect(at + "attention output weight", b.w_proj, d, d_attn_);
    expect(at + "attention output bias", b.b_proj, d, true);
    expect(at + "layer scale 1", b.ls1, d, true);
    if (!b.has_mlp()) {
      if (b.norm2.present() || b.w_fc2.size() > 0 || b.ls2.size() > 0)
        throw Error(source + ": " + at + "MLP has no hidden units");
      continue;
    }
    const Eigen::Index d_mlp = b.w_fc1.rows();
    expect(at + "norm2 weight", b.norm2.weight, d);
    expect(at + "norm2 bias", b.norm2.bias, d);
    expect(at + "mlp fc1 weight", b.w_fc1, d_mlp, d);
    expect(at + "mlp fc1 bias", b.b_fc1, d_mlp, true);
    expect(at + "mlp fc2 weight", b.w_fc2, d, d_mlp);
    expect(at + "mlp fc2 bias", b.b_fc2, d, true);
    expect(at + "layer scale 2", b.ls2, d, true);
  }
  if (final_norm.present()) {
    expect("final norm weight", final_norm.weight, d);
    expect("final norm bias", final_norm.bias, d);
  }
  validate_head(*this, source, values == CheckValues::yes);
  for (std::size_t c = 0; c < 3; ++c)
    if (!plausible_mean(norm.mean[c]) || !plausible_std(norm.std[c]))
      throw Error(source + ": mean must be finite and std finite and positive (a normalisation of pixels in 0…1: std at "
                  "least 1e-06, |mean| at most 1000); got mean " + std::to_string(norm.mean[c]) + ", std " +
                  std::to_string(norm.std[c]) + " for channel " + std::to_string(c));
}

void VitModel::validate_rope(const std::string& source) const {
  if (pos_embed.size() > 0 || pos_prefix != 0)
    throw Error(source + ": a model with rotary positions (RoPE) has no position table");
  if (grid_h <= 0 || grid_w <= 0) throw Error(source + ": the default patch grid must be positive");
  if (blocks.empty() || n_heads <= 0 || d_attn() % n_heads != 0) return;  // said below
  if (d_head() % 4 != 0 || rope.periods.size() != d_head() / 4)
    throw Error(source + ": RoPE periods are [" + std::to_string(rope.periods.size()) + "], expected [d_head/4] = [" +
                std::to_string(d_head() / 4) + "] for " + std::to_string(n_heads) + " heads of " +
                std::to_string(d_head()) + (d_head() % 4 ? " (not a multiple of 4)" : ""));
  if (!(rope.periods.array() > 0.0f).all() || !rope.periods.allFinite())
    throw Error(source + ": RoPE periods must be finite and positive");
}

void VitModel::check_weights() const {
  if (!weights_lost) return;
  if (std::string why = weights_lost(); !why.empty()) throw Error(why);
}

Matrix embed_image(const VitModel& model, const ImageTensor& image) {
  const int p = model.patch_size;
  return embed_patches(model, patchify(image, p), image.height / p, image.width / p);
}

Matrix embed_patches(const VitModel& model, const Matrix& patches, int grid_h, int grid_w, Matrix* before_norm) {
  const Eigen::Index n_patches = patches.rows();
  const Eigen::Index first = model.first_patch_token();

  Matrix x(first + n_patches, model.d_model());
  // b_patch + patches (n_patches, 3·P·P) · w_patchᵀ (3·P·P, d_model) → (n_patches, d_model),
  // float32 under any precision (run_block says why)
  const KeepFloat32 patch_embedding_in_float32;
  if (model.b_patch.size() > 0) {
    x.bottomRows(n_patches).rowwise() = model.b_patch;
    gemm_abt(x.bottomRows(n_patches), patches, model.w_patch, 1.0f, Accumulate::yes);
  } else {
    gemm_abt(x.bottomRows(n_patches), patches, model.w_patch);
  }
  // pos (grid_h·grid_w, d_model), resampled to this image's grid when it differs; none with RoPE
  if (model.pos_embed.rows() > model.pos_prefix)
    x.bottomRows(n_patches) += interpolate_pos_embed(model.pos_embed.bottomRows(model.pos_embed.rows() - model.pos_prefix),
                                                   model.grid_h, model.grid_w, grid_h, grid_w, model.pos_interp);
  if (model.has_class_token()) x.row(0) = model.cls_token;
  if (model.has_dist()) x.row(model.has_class_token() ? 1 : 0) = model.dist_token;
  // Registers sit between the leading tokens and the patches; DINOv2 gives them no position.
  if (model.n_registers() > 0) x.middleRows(first - model.n_registers(), model.n_registers()) = model.register_tokens;
  x.topRows(model.pos_prefix) += model.pos_embed.topRows(model.pos_prefix);
  if (before_norm) before_norm->resize(0, 0);
  if (!model.norm_pre.present()) return x;
  if (before_norm) *before_norm = x;
  layer_norm_into(Matrix(x), model.norm_pre, model.eps, x);
  return x;
}

BlockRule block_rule(const VitModel& model, bool scale) {
  BlockRule rule;
  rule.n_heads = model.n_heads;
  rule.eps = model.eps;
  rule.gelu = model.gelu;
  rule.scale = scale;
  rule.rotary = model.rope.present();
  rule.first_rotated = model.first_patch_token();
  return rule;
}

namespace {

// Scores above the diagonal masked: token i attends to tokens 0…i (clip/model.py build_attention_mask).
void mask_future(Matrix& scores) {
  for (Eigen::Index i = 0; i + 1 < scores.rows(); ++i) scores.row(i).tail(scores.cols() - i - 1).setConstant(kMasked);
}

using Index = Eigen::Index;

// The weights a step of run_block packs together, each in a slot of its own (gemm.hpp).
enum WeightSlot : int { kQkvSlot = 0, kProjSlot = 1, kFc1Slot = 2, kFc2Slot = 3 };

// Under the bf16 precision (gemm_bf16.hpp) only the MLP's products, fc1 and fc2 (two thirds of a
// block's weight products), are rounded to bf16. The attention branch (qkv, proj) and the patch
// embedding stay float32: the rounding of qkv reaches the softmax's logits directly, and proj's
// and the embedding's the residual stream every later block's logits come from; measured, each
// of the three moves the maps about as much as both MLP products together, and with all of them
// in bf16 sharp random attentions drifted past 1 % of the map's maximum. A PackedWeight keeps
// the precision it was made under, so the attention branch's are made under KeepFloat32.
PackedWeight attention_branch_weight(const WeightMatrix& w, WeightSlot slot) {
  const KeepFloat32 in_float32;
  return PackedWeight(w, slot);
}

// Rows [begin, end) of y ← x·wᵀ + b (b empty: no bias), on the calling thread: the bias first,
// the product's chains starting from it, as linear_into.
void linear_rows(const Matrix& x, const PackedWeight& w, const RowVector& b, Matrix& y, Index begin, Index end) {
  const Index n = end - begin;
  if (b.size() == 0) {
    w.product(y.middleRows(begin, n), x.middleRows(begin, n), Accumulate::no);
    return;
  }
  for (Index i = begin; i < end; ++i) y.row(i) = b;  // a contiguous copy per row (replicate is scalar)
  w.product(y.middleRows(begin, n), x.middleRows(begin, n), Accumulate::yes);
}

// The step before the heads, rows [begin, end) at a time, each block of rows on one thread with
// no barrier inside: xn ← LN1(x) (when the block has the norm), then
// xn (n_tokens, d_model) · w_qkvᵀ (d_model, 3·d_attn) + b_qkv → qkv (n_tokens, 3·d_attn) = [q | k | v].
void norm_and_qkv(const BlockRule& rule, const EncoderBlock& block, const Matrix& x, BlockBuffers& buf) {
  const bool norm = block.norm1.present();
  if (norm) buf.xn.resize(x.rows(), x.cols());
  buf.qkv.resize(x.rows(), block.w_qkv.rows());
  const PackedWeight w_qkv = attention_branch_weight(block.w_qkv, kQkvSlot);
  const Matrix& in = norm ? buf.xn : x;
  parallel_row_blocks(x.rows(), PackedWeight::kRowQuantum, x.cols() * block.w_qkv.rows(), [&](Index begin, Index end) {
    if (norm) layer_norm_rows(x, block.norm1, rule.eps, buf.xn, begin, end);
    linear_rows(in, w_qkv, block.b_qkv, buf.qkv, begin, end);
  });
}

// buf.qkv → buf.heads (n_tokens, d_attn); each sequence's heads' probabilities
// (length, length) go to `attention` when it is given. weights_only: skip the A·V products.
// The (sequence, head) pairs are independent, so they are handed to the threads whole: a head's
// products, its softmax (over its rows while they are in cache) and its A·V run on one thread,
// with no barrier between them: a head's 197×197 products are too small to split evenly in two,
// six or twelve heads are not. Every head's bytes are the same whoever computes it.
void multi_head_attention(const BlockRule& rule, const EncoderBlock& block, BlockBuffers& buf,
                          std::vector<Matrix>* attention, bool weights_only) {
  const Eigen::Index d = block.w_qkv.rows() / 3, d_head = d / rule.n_heads, n_tokens = buf.qkv.rows();
  const float s = rule.scale ? 1.0f / std::sqrt(static_cast<float>(d_head)) : 1.0f;
  buf.heads.resize(weights_only ? 0 : n_tokens, d);
  if (!buf.sequences.empty()) buf.heads.setZero();  // the rows between sequences: no head writes them
  const Sequence whole{0, n_tokens};
  const Sequence* sequences = buf.sequences.empty() ? &whole : buf.sequences.data();
  const std::size_t n_sequences = buf.sequences.empty() ? 1 : buf.sequences.size();
  // Each head's scores (length, length): straight in `attention` when it is kept, else in a
  // buffer of its own.
  const auto n_jobs = n_sequences * static_cast<std::size_t>(rule.n_heads);
  const std::size_t first = attention ? attention->size() : 0;
  if (attention) attention->resize(first + n_jobs);
  else buf.scores.resize(n_jobs);
  parallel_for(static_cast<int>(n_jobs), gemm_threads(), [&](int job) {
    const auto j = static_cast<std::size_t>(job);
    const Sequence& seq = sequences[j / static_cast<std::size_t>(rule.n_heads)];
    const auto h = static_cast<Eigen::Index>(j % static_cast<std::size_t>(rule.n_heads));
    Matrix& scores = attention ? (*attention)[first + j] : buf.scores[j];
    scores.resize(seq.length, seq.length);
    const auto q = buf.qkv.block(seq.begin, h * d_head, seq.length, d_head);          // (length, d_head)
    const auto k = buf.qkv.block(seq.begin, d + h * d_head, seq.length, d_head);      // (length, d_head)
    const auto v = buf.qkv.block(seq.begin, 2 * d + h * d_head, seq.length, d_head);  // (length, d_head)
    if (rule.rotary) {  // this head's own columns: no other thread touches them
      apply_rope(buf.qkv.block(seq.begin, h * d_head, seq.length, d_head), rule.first_rotated, buf.rope);
      apply_rope(buf.qkv.block(seq.begin, d + h * d_head, seq.length, d_head), rule.first_rotated, buf.rope);
    }
    // s·q (length, d_head) · kᵀ (d_head, length) → scores (length, length); s is gemm's α
    gemm_abt(scores, q, k, s);
    if (rule.causal) mask_future(scores);
    softmax_rows(scores);
    // weights (length, length) · v (length, d_head) → head output (length, d_head)
    if (!weights_only) gemm_ab(buf.heads.block(seq.begin, h * d_head, seq.length, d_head), scores, v);
  });
}

// Rows [begin, end) of x += ls ⊙ (u·wᵀ + b): a branch's last linear layer, added onto the
// residual stream. Without layer scale the product lands on x directly (its chains accumulate
// onto x + b): no branch matrix, no separate residual pass.
void add_branch_rows(Matrix& x, const Matrix& u, const PackedWeight& w, const RowVector& b, const RowVector& layer_scale,
                     Matrix& branch, Index begin, Index end) {
  const Index n = end - begin;
  if (layer_scale.size() == 0) {
    if (b.size() > 0) x.middleRows(begin, n).rowwise() += b;
    // x (n, d_model) += u (n, d_in) · wᵀ (d_in, d_model)
    w.product(x.middleRows(begin, n), u.middleRows(begin, n), Accumulate::yes);
    return;
  }
  linear_rows(u, w, b, branch, begin, end);  // (n, d_model)
  x.middleRows(begin, n).array() += branch.middleRows(begin, n).array().rowwise() * layer_scale.array();
}

// The step after the heads, rows [begin, end) at a time, each block of rows on one thread with
// no barrier inside (a row's projection needs only that row of every head, its MLP only that
// row): x += proj(heads), then x += fc2(GELU(fc1(LN2(x)))), the GELU applied to the block's
// hidden rows right after fc1 wrote them, while they are in cache. Each row goes through the
// same per-row code and per-element chains as it would alone, so the cut changes no byte.
void project_and_mlp(const BlockRule& rule, const EncoderBlock& block, Matrix& x, BlockBuffers& buf, BlockTape* record) {
  const Index n_tokens = x.rows(), d_model = x.cols();
  const bool mlp = block.has_mlp();
  const PackedWeight w_proj = attention_branch_weight(block.w_proj, kProjSlot);
  std::optional<PackedWeight> w_fc1, w_fc2;
  Index row_cost = block.w_proj.rows() * block.w_proj.cols();
  if (mlp) {
    w_fc1.emplace(block.w_fc1, kFc1Slot);
    w_fc2.emplace(block.w_fc2, kFc2Slot);
    buf.xn.resize(n_tokens, d_model);
    buf.hidden.resize(n_tokens, block.w_fc1.rows());
    row_cost += 2 * block.w_fc1.rows() * d_model;
  }
  if (block.ls1.size() > 0 || block.ls2.size() > 0) buf.branch.resize(n_tokens, d_model);
  if (record) {
    record->x_mid.resize(n_tokens, d_model);
    if (mlp) record->pre_gelu.resize(n_tokens, block.w_fc1.rows());
  }
  parallel_row_blocks(n_tokens, PackedWeight::kRowQuantum, row_cost, [&](Index begin, Index end) {
    const Index n = end - begin;
    // heads (n, d_attn) · w_projᵀ (d_attn, d_model) → onto x
    add_branch_rows(x, buf.heads, w_proj, block.b_proj, block.ls1, buf.branch, begin, end);
    if (record) record->x_mid.middleRows(begin, n) = x.middleRows(begin, n);
    if (!mlp) return;
    layer_norm_rows(x, block.norm2, rule.eps, buf.xn, begin, end);
    // xn (n, d_model) · w_fc1ᵀ (d_model, d_mlp) + b_fc1 → hidden (n, d_mlp)
    linear_rows(buf.xn, *w_fc1, block.b_fc1, buf.hidden, begin, end);
    if (record) record->pre_gelu.middleRows(begin, n) = buf.hidden.middleRows(begin, n);
    gelu_rows(buf.hidden, rule.gelu, begin, end);
    // hidden (n, d_mlp) · w_fc2ᵀ (d_mlp, d_model) → onto x
    add_branch_rows(x, buf.hidden, *w_fc2, block.b_fc2, block.ls2, buf.branch, begin, end);
  });
}

}  // namespace

// Three parallel steps per block, a barrier after each: LN1 and qkv by rows, the heads, then
// the projection and the MLP by rows. Between them, every row of q, k and v (for any head) and
// every head (for a row's projection) must be complete.
void run_block(const BlockRule& rule, const EncoderBlock& block, Matrix& x, BlockBuffers& buf,
               std::vector<Matrix>* attention, bool attention_only, BlockTape* record) {
  if (record) record->x = x;
  norm_and_qkv(rule, block, x, buf);
  multi_head_attention(rule, block, buf, attention, attention_only);
  if (attention_only) return;
  if (record) {
    record->qkv = buf.qkv;
    record->heads = buf.heads;
  }
  if (!block.projected()) {
    std::swap(x, buf.heads);  // (n_tokens, d_attn): the output of an attention-only last block
    return;
  }
  project_and_mlp(rule, block, x, buf, record);
}

namespace {

// A NaN or ∞ in the activations (a normalisation or weights that overflow float32) spreads to
// every later token through LayerNorm and attention. What a forward hands out is checked once:
// each kept head's rows, the final tokens and the logits, one pass over what was computed
// anyway, small next to the products that made it. The heads are checked by their row sums:
// softmax_rows answers a row whose maximum is not finite with zeros (a fully masked row; the
// forward masks nothing), and a NaN fails the comparison.
[[noreturn]] void non_finite(int layer) {
  throw Error("the activations became non-finite (NaN or infinity) by layer " + std::to_string(layer) +
              ": the normalisation or the weights overflow float32");
}

void require_finite_rows(const Matrix& attention, int layer) {
  if (!((attention.rowwise().sum().array() - 1.0f).abs() < 0.5f).all()) non_finite(layer);
}

template <class Derived>
void require_finite(const Eigen::DenseBase<Derived>& m, int layer) {
  if (!m.allFinite()) non_finite(layer);
}

}  // namespace

ForwardResult forward(const VitModel& model, const ImageTensor& image, const ForwardOptions& options) {
  const int n_layers = model.n_layers();
  const bool full = options.tape || options.last_layer < 0 || options.last_layer >= n_layers;
  const int last = full ? n_layers - 1 : options.last_layer;
  const int keep_from = options.keep_from_layer < 0 ? last : std::min(options.keep_from_layer, last);

  ForwardResult result;
  result.first_kept_layer = keep_from;
  if (!options.on_attention) result.attention.resize(static_cast<std::size_t>(last - keep_from + 1));
  if (options.tape) options.tape->blocks.resize(static_cast<std::size_t>(n_layers));
  // x (n_tokens, d_model), updated in place by every block; a tape keeps what LRP reads of the embedding
  Matrix x = options.tape ? embed_patches(model, options.tape->patches = patchify(image, model.patch_size),
                                          image.height / model.patch_size, image.width / model.patch_size,
                                          &options.tape->embedded)
                          : embed_image(model, image);
  const BlockRule rule = block_rule(model, options.scale);
  BlockBuffers buf;
  if (model.rope.present()) buf.rope = rope_table(model.rope, image.height / model.patch_size, image.width / model.patch_size);
  std::vector<Matrix> streamed;
  for (int l = 0; l <= last; ++l) {
    std::vector<Matrix>* keep = nullptr;
    if (l >= keep_from) keep = options.on_attention ? &streamed : &result.attention[static_cast<std::size_t>(l - keep_from)];
    BlockTape* record = options.tape ? &options.tape->blocks[static_cast<std::size_t>(l)] : nullptr;
    if (record) record->attention.clear();
    // With a tape the probabilities are the tape's, and a caller that keeps them gets a copy.
    std::vector<Matrix>* probabilities = record ? &record->attention : keep;
    run_block(rule, model.blocks[static_cast<std::size_t>(l)], x, buf, probabilities, !full && l == last, record);
    if (probabilities)  // this layer's heads, the last n_heads of `probabilities`
      for (std::size_t h = probabilities->size() - static_cast<std::size_t>(model.n_heads); h < probabilities->size(); ++h)
        require_finite_rows((*probabilities)[h], l);
    if (options.on_block_output && (full || l < last)) options.on_block_output(l, x);
    if (keep == &streamed) {
      options.on_attention(l, record ? record->attention : streamed);
      streamed.clear();
    } else if (keep && record) {
      *keep = record->attention;
    }
  }
  if (options.tape) options.tape->x_out = x;
  if (!full) {
    model.check_weights();
    return result;
  }
  result.tokens = model.final_norm.present() ? layer_norm(x, model.final_norm, model.eps) : std::move(x);
  require_finite(result.tokens, last);
  if (model.pooling == Pooling::probe) {
    ProbePooling pooled = probe_pooling(model, result.tokens);
    result.probe_attention = std::move(pooled.attention);   // [head] (1, n_tokens)
    result.embedding = l2_normalized(pooled.pooled);         // (d_model): SigLIP's image embedding
    require_finite(result.embedding, last);
  } else if (model.w_embed.size() > 0) {
    result.embedding = image_embedding(model, result.tokens);  // (d_embed)
    require_finite(result.embedding, last);
  }
  if (model.has_classifier()) {
    // (n_classes): the texts' logits of the embedding just made, else the classifier's
    result.logits = model.zero_shot.present() ? zero_shot_logits(model.zero_shot, result.embedding)
                                              : classifier_logits(model, result.tokens);
    require_finite(result.logits, last);
  }
  model.check_weights();
  return result;
}

}  // namespace vitattn
