#include "vit_backward.hpp"

#include <cmath>
#include <unsupported/Eigen/SpecialFunctions>  // Array::erf
#include <string>

#include "error.hpp"
#include "gemm.hpp"
#include "parallel_for.hpp"
#include "parallel_rows.hpp"
#include "vit_head.hpp"

namespace vitattn {

// dx (n_tokens, d_model) += the LayerNorm's backward of dy = ∂/∂LN(x), row by row:
//   x̂ = (x − μ)·σ⁻¹,  g = dy ⊙ γ,  dx = σ⁻¹·(g − mean(g) − x̂·mean(g ⊙ x̂))
// (torch's native_layer_norm_backward, biased variance). μ and σ are recomputed from x.
void layer_norm_backward_add(const Matrix& x, const LayerNorm& norm, float eps, const Matrix& dy, Matrix& dx) {
  const float inv_d = 1.0f / static_cast<float>(x.cols());
  parallel_rows(x.rows(), 3 * x.cols(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      const auto row = x.row(i).array();
      const auto [mean, inv_std] = layer_norm_statistics(row, eps);
      const auto x_hat = (row - mean) * inv_std;                  // (d_model)
      const auto g = dy.row(i).array() * norm.weight.array();     // (d_model)
      const float mean_g = g.sum() * inv_d;
      const float mean_gx = (g * x_hat).sum() * inv_d;
      dx.row(i).array() += inv_std * (g - mean_g - x_hat * mean_gx);
    }
  });
}

// d (n_tokens, d_mlp) ⊙= GELU'(h), h the pre-activation, in place:
//   erf:  Φ(h) + h·φ(h) = ½(1 + erf(h/√2)) + h·exp(−h²/2)/√(2π)
//   tanh: with t = tanh(k(h + 0.044715h³)), k = √(2/π):  ½(1 + t) + ½h(1 − t²)·k(1 + 3·0.044715h²)
//   quick: with s = σ(1.702h):  s + 1.702·h·s(1 − s)
void gelu_backward_inplace(Matrix& d, const Matrix& h, Gelu kind) {
  parallel_rows(d.rows(), d.cols(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      Eigen::Map<Eigen::ArrayXf> g(d.row(i).data(), d.cols());
      Eigen::Map<const Eigen::ArrayXf> a(h.row(i).data(), h.cols());
      if (kind == Gelu::erf) {
        const float inv_sqrt_2pi = static_cast<float>(0.5 * M_2_SQRTPI * M_SQRT1_2);
        g *= 0.5f * (1.0f + (a * static_cast<float>(M_SQRT1_2)).erf()) + a * (-0.5f * a.square()).exp() * inv_sqrt_2pi;
      } else if (kind == Gelu::quick) {
        for (Eigen::Index j = 0; j < g.size(); ++j) {
          const float x = a(j), s = 1.0f / (1.0f + std::exp(-1.702f * x));
          g(j) *= s + 1.702f * x * s * (1.0f - s);
        }
      } else {
        const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
        for (Eigen::Index j = 0; j < g.size(); ++j) {  // std::tanh, as the portable forward (the vector one: vector_math.hpp)
          const float x = a(j), t = std::tanh(k * (x + 0.044715f * x * x * x));
          g(j) *= 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
        }
      }
    }
  });
}

// ∂/∂(scores) of a row-wise softmax, from A and ∂A: dS = A ⊙ (dA − rowsum(A ⊙ dA)).
void softmax_backward(const Matrix& a, const Matrix& d_a, Matrix& d_s) {
  d_s.resize(a.rows(), a.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const float dot = (a.row(i).array() * d_a.row(i).array()).sum();
    d_s.row(i).array() = a.row(i).array() * (d_a.row(i).array() - dot);
  }
}

namespace {

// One head's backward: ∂/∂(its output) → ∂A (n_tokens, n_tokens) and its columns of d_qkv.
// The forward was S = s·q·kᵀ, A = softmax(S), o = A·v.
void head_backward(const BlockTape& tape, int h, Eigen::Index d_attn, Eigen::Index d_head, float s,
                   const Matrix& d_heads, Matrix& d_a, Matrix& d_s, Matrix& transposed, Matrix& d_qkv) {
  const Matrix& a = tape.attention[static_cast<std::size_t>(h)];      // (n_tokens, n_tokens)
  const auto q = tape.qkv.middleCols(h * d_head, d_head);             // (n_tokens, d_head)
  const auto k = tape.qkv.middleCols(d_attn + h * d_head, d_head);    // (n_tokens, d_head)
  const auto v = tape.qkv.middleCols(2 * d_attn + h * d_head, d_head);  // (n_tokens, d_head)
  const auto d_o = d_heads.middleCols(h * d_head, d_head);            // (n_tokens, d_head)
  d_a.resize(a.rows(), a.cols());
  // d_o (n_tokens, d_head) · vᵀ (d_head, n_tokens) → ∂A (n_tokens, n_tokens)
  gemm_abt(d_a, d_o, v);
  // Aᵀ (n_tokens, n_tokens) · d_o (n_tokens, d_head) → ∂v (n_tokens, d_head)
  transposed = a.transpose();
  gemm_ab(d_qkv.middleCols(2 * d_attn + h * d_head, d_head), transposed, d_o);
  softmax_backward(a, d_a, d_s);  // ∂S (n_tokens, n_tokens)
  // s·∂S (n_tokens, n_tokens) · k (n_tokens, d_head) → ∂q (n_tokens, d_head)
  gemm_ab(d_qkv.middleCols(h * d_head, d_head), d_s, k, s);
  // s·∂Sᵀ (n_tokens, n_tokens) · q (n_tokens, d_head) → ∂k (n_tokens, d_head)
  transposed = d_s.transpose();
  gemm_ab(d_qkv.middleCols(d_attn + h * d_head, d_head), transposed, q, s);
}

// ∂/∂(heads' outputs) (n_tokens, d_attn) → every head's ∂A and d_qkv (n_tokens, 3·d_attn).
// Heads are handed to the threads whole, as in the forward.
void attention_backward(const BlockRule& rule, const EncoderBlock& block, const BlockTape& tape, BlockGradients& out,
                        BackwardBuffers& buf) {
  const Eigen::Index d_attn = block.w_qkv.rows() / 3, d_head = d_attn / rule.n_heads;
  const float s = rule.scale ? 1.0f / std::sqrt(static_cast<float>(d_head)) : 1.0f;
  const auto n_heads = static_cast<std::size_t>(rule.n_heads);
  out.d_attention.resize(n_heads);
  buf.transposed.resize(n_heads);
  buf.d_scores.resize(n_heads);
  buf.d_qkv.resize(tape.qkv.rows(), tape.qkv.cols());
  parallel_for(rule.n_heads, gemm_threads(), [&](int h) {
    const auto i = static_cast<std::size_t>(h);
    head_backward(tape, h, d_attn, d_head, s, buf.d_heads, out.d_attention[i], buf.d_scores[i], buf.transposed[i],
                  buf.d_qkv);
  });
}

// d_branch = d ⊙ layer scale (or d itself when there is none): the gradient at a branch's output.
const Matrix& through_layer_scale(const Matrix& d, const RowVector& layer_scale, Matrix& d_branch) {
  if (layer_scale.size() == 0) return d;
  d_branch = d.array().rowwise() * layer_scale.array();
  return d_branch;
}

// The MLP branch: d_output (n_tokens, d_model) → buf.d_stream = ∂/∂x_mid, the residual's share plus the MLP's.
void mlp_backward(const BlockRule& rule, const EncoderBlock& block, const BlockTape& tape, const Matrix& d_output,
                  BackwardBuffers& buf) {
  const Matrix& d_out = through_layer_scale(d_output, block.ls2, buf.d_branch);
  buf.d_hidden.resize(d_out.rows(), block.w_fc2.cols());
  // d_out (n_tokens, d_model) · w_fc2 (d_model, d_mlp) → ∂GELU(h) (n_tokens, d_mlp)
  gemm_ab(buf.d_hidden, d_out, block.w_fc2);
  gelu_backward_inplace(buf.d_hidden, tape.pre_gelu, rule.gelu);  // → ∂h
  buf.d_xn.resize(d_out.rows(), block.w_fc1.cols());
  // ∂h (n_tokens, d_mlp) · w_fc1 (d_mlp, d_model) → ∂LN2(x_mid) (n_tokens, d_model)
  gemm_ab(buf.d_xn, buf.d_hidden, block.w_fc1);
  buf.d_stream = d_output;  // the residual path
  layer_norm_backward_add(tape.x_mid, block.norm2, rule.eps, buf.d_xn, buf.d_stream);
}

}  // namespace

namespace {

// ∂y_c/∂(the pooled row) (d_pool) for the tokens t after the final norm: the classifier's row c;
// for zero-shot texts, ∂y_c/∂u of the embedding u before its normalisation (zero_shot.hpp) back
// through w_embed (CLIP's projection; SigLIP has none).
RowVector pooled_row_gradient(const VitModel& model, const Matrix& t, int c) {
  if (!model.zero_shot.present()) return model.w_head.row(c);
  const RowVector pooled = pooled_features(model, t);  // (d_model)
  const RowVector d_u = zero_shot_gradient(model.zero_shot, unnormalized_embedding(model, pooled), c);  // (d_embed)
  if (model.w_embed.size() == 0) return d_u;
  return d_u * model.w_embed;  // d_u (d_embed) · w_embed (d_embed, d_model) → (d_model)
}

// ∂target/∂t (n_tokens, d_model) for the tokens t the head reads (after the final norm), from
// d_pooled = ∂target/∂(pooled_features(t)), per pooling (vit_head.hpp); nonzero only in the rows
// the pooling reads. `t` is read for patch_mean's fc_norm, whose backward needs the mean it
// normalised, and for the probe, whose forward is run again with its tape.
Matrix pooled_gradient(const VitModel& model, const Matrix& t, const RowVector& d_pooled, ProbeGradients* probe) {
  Matrix d_t = Matrix::Zero(t.rows(), t.cols());
  const Eigen::Index d = t.cols(), first = model.first_patch_token(), n = t.rows() - first;
  const Eigen::Index d_pool = model.pooling == Pooling::class_and_patch_mean ? 2 * d : d;
  if (d_pooled.size() != d_pool)
    throw Error("the gradient at the pooled row has " + std::to_string(d_pooled.size()) + " values, the row " +
                std::to_string(d_pool));
  switch (model.pooling) {
    case Pooling::class_token:
    case Pooling::class_and_dist:  // the main row; logit_gradient adds the distillation head's
      d_t.row(0) = d_pooled;
      break;
    case Pooling::patch_mean: {  // p = fc_norm(mean of t[first…])
      if (n <= 0) throw Error("no patch tokens to pool");
      Matrix d_mean = d_pooled;  // (1, d_model) ∂/∂fc_norm(mean), then ∂/∂mean
      if (model.fc_norm.present()) {
        const Matrix mean = (t.bottomRows(n).cast<double>().colwise().sum() / static_cast<double>(n)).cast<float>();
        Matrix through = Matrix::Zero(1, d);
        layer_norm_backward_add(mean, model.fc_norm, model.eps, d_mean, through);
        d_mean = through;
      }
      d_t.bottomRows(n).rowwise() = d_mean.row(0) / static_cast<float>(n);
      break;
    }
    case Pooling::class_and_patch_mean:  // p = [t[0], mean of t[first…]]
      if (n <= 0) throw Error("no patch tokens to pool");
      d_t.row(0) = d_pooled.head(d);
      d_t.bottomRows(n).rowwise() = d_pooled.tail(d) / static_cast<float>(n);
      break;
    case Pooling::probe: {
      ProbeGradients g = probe_backward(model, t, d_pooled);
      if (!probe) return std::move(g.d_tokens);
      *probe = std::move(g);
      return probe->d_tokens;
    }
  }
  return d_t;
}

// The rows of the tokens a pooling reads from the top (the rest of d_t is zero), or all of them.
Eigen::Index leading_rows_read(const VitModel& model, Eigen::Index n_tokens) {
  if (model.pooling == Pooling::class_token) return 1;
  if (model.pooling == Pooling::class_and_dist) return 2;
  return n_tokens;
}

// d_t = ∂/∂LN_f(x) (n_tokens, d_model) → ∂/∂x, back through the final norm (d_t itself without one).
Matrix through_final_norm(const VitModel& model, const Matrix& x, const Matrix& d_t) {
  if (!model.final_norm.present()) return d_t;
  Matrix d_x = Matrix::Zero(x.rows(), x.cols());  // (n_tokens, d_model)
  const Eigen::Index rows = leading_rows_read(model, x.rows());  // the rows read; the rest stay 0
  Matrix d_top = Matrix::Zero(rows, x.cols());
  layer_norm_backward_add(x.topRows(rows), model.final_norm, model.eps, d_t.topRows(rows), d_top);
  d_x.topRows(rows) = d_top;
  return d_x;
}

// LN_f(x), the tokens the head reads; x itself without a final norm.
Matrix final_tokens(const VitModel& model, const Matrix& x) {
  return model.final_norm.present() ? layer_norm(x, model.final_norm, model.eps) : x;
}

}  // namespace

Matrix pooled_row_backward(const VitModel& model, const Matrix& x, const RowVector& d_pooled,
                           ProbeGradients* probe) {
  return through_final_norm(model, x, pooled_gradient(model, final_tokens(model, x), d_pooled, probe));
}

Matrix logit_gradient(const VitModel& model, const Matrix& x, int class_index, ProbeGradients* probe) {
  if (!model.has_classifier()) throw Error("the model has no classifier, so no class logit to take gradients of");
  if (class_index < 0 || class_index >= model.n_classes())
    throw Error("class " + std::to_string(class_index) + " is not one of the model's " +
                std::to_string(model.n_classes()) + " classes");
  // y = ½(head(t[0]) + head_dist(t[1])) for distilled DeiT's own classifier
  const bool distilled = model.pooling == Pooling::class_and_dist && !model.zero_shot.present();
  const Matrix t = final_tokens(model, x);
  const RowVector w = pooled_row_gradient(model, t, class_index);  // (d_pool)
  Matrix d_t = pooled_gradient(model, t, distilled ? RowVector(0.5f * w) : w, probe);
  if (distilled) d_t.row(1) = 0.5f * model.w_head_dist.row(class_index);
  return through_final_norm(model, x, d_t);
}

void block_backward(const BlockRule& rule, const EncoderBlock& block, const BlockTape& tape, const Matrix& d_output,
                    BlockGradients& out, BackwardBuffers& buf) {
  // The tape's q and k are the rotated ones; the backward does not undo the rotation, so it
  // would hand out the gradient of another function. Refused rather than wrong.
  if (rule.rotary)
    throw Error("gradients through rotary positions (RoPE, DINOv3) are not computed: no class-specific map for this model");
  if (!block.projected()) {
    buf.d_heads = d_output;  // the heads' outputs were the block's output: no residual
    buf.d_stream.setZero(tape.x.rows(), tape.x.cols());
  } else {
    if (block.has_mlp()) mlp_backward(rule, block, tape, d_output, buf);
    else buf.d_stream = d_output;
    const Matrix& d_proj = through_layer_scale(buf.d_stream, block.ls1, buf.d_branch);
    buf.d_heads.resize(d_proj.rows(), block.w_proj.cols());
    // d_proj (n_tokens, d_model) · w_proj (d_model, d_attn) → ∂(heads' outputs) (n_tokens, d_attn)
    gemm_ab(buf.d_heads, d_proj, block.w_proj);
  }
  attention_backward(rule, block, tape, out, buf);
  out.d_norm1.resize(tape.x.rows(), tape.x.cols());
  // d_qkv (n_tokens, 3·d_attn) · w_qkv (3·d_attn, d_model) → ∂LN1(x) (n_tokens, d_model)
  gemm_ab(out.d_norm1, buf.d_qkv, block.w_qkv);
  out.d_input = buf.d_stream;  // the residual path
  if (block.norm1.present()) layer_norm_backward_add(tape.x, block.norm1, rule.eps, out.d_norm1, out.d_input);
  else out.d_input += out.d_norm1;
}

Matrix encoder_backward(const VitModel& model, const ForwardTape& tape, int class_index, bool scale,
                        const std::function<void(int layer, const BlockGradients&)>& on_block) {
  if (static_cast<int>(tape.blocks.size()) != model.n_layers())
    throw Error("the forward's tape has " + std::to_string(tape.blocks.size()) + " blocks, the model " +
                std::to_string(model.n_layers()));
  Matrix d_x = logit_gradient(model, tape.x_out, class_index);  // (n_tokens, d_model)
  const BlockRule rule = block_rule(model, scale);
  BlockGradients grads;
  BackwardBuffers buf;
  for (int l = model.n_layers() - 1; l >= 0; --l) {
    block_backward(rule, model.blocks[static_cast<std::size_t>(l)], tape.blocks[static_cast<std::size_t>(l)], d_x, grads,
                   buf);
    if (on_block) on_block(l, grads);
    std::swap(d_x, grads.d_input);
  }
  return d_x;
}

Matrix norm1_output(const VitModel& model, int layer, const BlockTape& tape) {
  const EncoderBlock& block = model.blocks.at(static_cast<std::size_t>(layer));
  return block.norm1.present() ? layer_norm(tape.x, block.norm1, model.eps) : tape.x;
}

}  // namespace vitattn
