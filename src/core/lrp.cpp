#include "lrp.hpp"

#include <cmath>
#include <string>

#include "error.hpp"
#include "gemm.hpp"
#include "layers.hpp"
#include "parallel_rows.hpp"
#include "vector_math.hpp"
#include "vit_head.hpp"

namespace vitattn {
namespace {

// zennit's stabilize, element by element: z + ε·(sign(z) + [z = 0]).
float stabilized(float z) { return z + (z > 0.0f ? lrp_stabilizer : z < 0.0f ? -lrp_stabilizer : lrp_stabilizer); }

// c (n, d_out) = [z ≷ 0]·R_z / stab(z_mod): the share of each output's relevance per unit of
// its modified output, for the outputs of one sign (+1: z > 0, −1: z < 0).
Matrix relevance_per_output(const Matrix& z, const Matrix& d_z, const Matrix& z_mod, int sign) {
  Matrix c(z.rows(), z.cols());
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index j = 0; j < z.cols(); ++j) {
      const float zij = z(i, j);
      const bool picked = sign > 0 ? zij > 0.0f : zij < 0.0f;
      c(i, j) = picked ? zij * d_z(i, j) / stabilized(z_mod(i, j)) : 0.0f;
    }
  return c;
}

}  // namespace

Matrix gamma_linear_backward(const Matrix& x, ConstMatrixView w, const RowVector& b, const Matrix& d_z, float gamma) {
  const Eigen::Index n = x.rows(), d_out = w.rows(), d_in = w.cols();
  if (x.cols() != d_in || d_z.rows() != n || d_z.cols() != d_out || (b.size() != 0 && b.size() != d_out))
    throw Error("the Gamma rule's input, weights and output gradient do not fit");  // a caller's bug
  const Matrix w_up = w.array() + gamma * w.array().max(0.0f);    // (d_out, d_in) W + γW⁺
  const Matrix w_down = w.array() + gamma * w.array().min(0.0f);  // (d_out, d_in) W + γW⁻
  const Matrix x_pos = x.array().max(0.0f), x_neg = x.array().min(0.0f);  // (n, d_in)
  Matrix z(n, d_out), z_up(n, d_out), z_down(n, d_out);
  if (b.size() > 0) {
    z.rowwise() = b;
    z_up.rowwise() = RowVector(b.array() + gamma * b.array().max(0.0f));
    z_down.rowwise() = RowVector(b.array() + gamma * b.array().min(0.0f));
  } else {
    z.setZero();
    z_up.setZero();
    z_down.setZero();
  }
  // x (n, d_in) · Wᵀ (d_in, d_out) + b → z (n, d_out), the layer's own output
  gemm_abt(z, x, w, 1.0f, Accumulate::yes);
  // x⁺ · W↑ᵀ + b↑ + x⁻ · W↓ᵀ → z↑ (n, d_out)
  gemm_abt(z_up, x_pos, w_up, 1.0f, Accumulate::yes);
  gemm_abt(z_up, x_neg, w_down, 1.0f, Accumulate::yes);
  // x⁺ · W↓ᵀ + b↓ + x⁻ · W↑ᵀ → z↓ (n, d_out)
  gemm_abt(z_down, x_pos, w_down, 1.0f, Accumulate::yes);
  gemm_abt(z_down, x_neg, w_up, 1.0f, Accumulate::yes);
  const Matrix c_up = relevance_per_output(z, d_z, z_up, +1);      // (n, d_out)
  const Matrix c_down = relevance_per_output(z, d_z, z_down, -1);  // (n, d_out)
  Matrix through_pos(n, d_in), through_neg(n, d_in);
  // c↑ (n, d_out) · W↑ (d_out, d_in) + c↓ · W↓ → what x⁺ receives (n, d_in)
  gemm_ab(through_pos, c_up, w_up);
  gemm_ab(through_pos, c_down, w_down, 1.0f, Accumulate::yes);
  // c↑ · W↓ + c↓ · W↑ → what x⁻ receives (n, d_in)
  gemm_ab(through_neg, c_up, w_down);
  gemm_ab(through_neg, c_down, w_up, 1.0f, Accumulate::yes);
  Matrix d_x(n, d_in);
  d_x.array() = (x.array() > 0.0f).select(through_pos.array(), (x.array() < 0.0f).select(through_neg.array(), 0.0f));
  return d_x;
}

// g = dy ⊙ γ, dx += σ⁻¹·(g − mean(g)) row by row: x̂'s backward without σ's term.
void layer_norm_identity_add(const Matrix& x, const LayerNorm& norm, float eps, const Matrix& dy, Matrix& dx) {
  const float inv_d = 1.0f / static_cast<float>(x.cols());
  parallel_rows(x.rows(), 3 * x.cols(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      const float inv_std = layer_norm_statistics(x.row(i).array(), eps).inv_std;
      const auto g = dy.row(i).array() * norm.weight.array();  // (d_model)
      dx.row(i).array() += inv_std * (g - g.sum() * inv_d);
    }
  });
}

// GELU(h) = h·s(h) for each form, so GELU(h)/h = s(h) without a division:
//   erf: Φ(h) = ½(1 + erf(h/√2));  tanh: ½(1 + tanh(k(h + 0.044715h³)));  quick: σ(1.702h).
void gelu_identity_inplace(Matrix& d, const Matrix& h, Gelu kind) {
  parallel_rows(d.rows(), d.cols(), [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index i = begin; i < end; ++i) {
      Eigen::Map<Eigen::ArrayXf> g(d.row(i).data(), d.cols());
      Eigen::Map<const Eigen::ArrayXf> a(h.row(i).data(), h.cols());
      if (kind == Gelu::erf) {  // Φ as the forward's GELU computes it (vector_math.hpp)
        Eigen::ArrayXf phi(g.size());
        erf_gelu_gate_row(a.data(), phi.data(), g.size());
        g *= phi;
      } else if (kind == Gelu::quick) {
        for (Eigen::Index j = 0; j < g.size(); ++j) g(j) *= 1.0f / (1.0f + std::exp(-1.702f * a(j)));
      } else {
        const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
        // ½(1 + tanh(y)) with std::tanh: the forward's σ(2y) (vector_math.hpp) within rounding
        for (Eigen::Index j = 0; j < g.size(); ++j) {
          const float x = a(j);
          g(j) *= 0.5f * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
        }
      }
    }
  });
}

namespace {

// d_y (n, d) → d_x added onto `into`, through a LayerNorm's identity rule, or as it is without one.
void through_norm_add(const Matrix& x, const LayerNorm& norm, float eps, const Matrix& d_y, Matrix& into) {
  if (norm.present()) layer_norm_identity_add(x, norm, eps, d_y, into);
  else into += d_y;
}

// d (n, d) ⊙ layer scale, or d itself without one: a constant factor, its plain gradient.
Matrix times_layer_scale(const Matrix& d, const RowVector& layer_scale) {
  if (layer_scale.size() == 0) return d;
  return d.array().rowwise() * layer_scale.array();
}

// One block: d_output (n_tokens, d_model) at the block's output → at its input.
//   x_mid = x + ls1 ⊙ (heads·W_projᵀ + b_proj), heads_h = A_h·v_h, v = LN1(x)·W_Vᵀ + b_V
//   out   = x_mid + ls2 ⊙ fc2(GELU(fc1(LN2(x_mid))))
Matrix block_lrp(const BlockRule& rule, const EncoderBlock& block, const BlockTape& tape, const Matrix& d_output,
                 float gamma) {
  if (!block.projected()) throw Error("AttnLRP needs blocks with an output projection (the seeded head has none)");
  Matrix d_mid = d_output;  // (n_tokens, d_model) the residual path
  if (block.has_mlp()) {
    const Matrix d_fc2 = times_layer_scale(d_output, block.ls2);  // (n_tokens, d_model)
    Matrix activated = tape.pre_gelu;                              // (n_tokens, d_mlp) GELU(h)
    gelu_inplace(activated, rule.gelu);
    Matrix d_hidden = gamma_linear_backward(activated, block.w_fc2, block.b_fc2, d_fc2, gamma);  // (n_tokens, d_mlp)
    gelu_identity_inplace(d_hidden, tape.pre_gelu, rule.gelu);
    const Matrix xn = block.norm2.present() ? layer_norm(tape.x_mid, block.norm2, rule.eps) : tape.x_mid;
    const Matrix d_xn = gamma_linear_backward(xn, block.w_fc1, block.b_fc1, d_hidden, gamma);  // (n_tokens, d_model)
    through_norm_add(tape.x_mid, block.norm2, rule.eps, d_xn, d_mid);
  }
  const Matrix d_proj = times_layer_scale(d_mid, block.ls1);  // (n_tokens, d_model)
  const Matrix d_heads = gamma_linear_backward(tape.heads, block.w_proj, block.b_proj, d_proj, gamma);  // (n_tokens, d_attn)
  const Eigen::Index d_attn = block.w_qkv.rows() / 3, d_head = d_attn / rule.n_heads;
  Matrix d_v(d_heads.rows(), d_attn);
  for (int h = 0; h < rule.n_heads; ++h) {
    const Matrix a_t = tape.attention[static_cast<std::size_t>(h)].transpose();  // (n_tokens, n_tokens) Aᵀ
    // Aᵀ (n_tokens, n_tokens) · d_o (n_tokens, d_head) → ∂v_h (n_tokens, d_head); A a constant
    gemm_ab(d_v.middleCols(h * d_head, d_head), a_t, d_heads.middleCols(h * d_head, d_head));
  }
  const Matrix xn = block.norm1.present() ? layer_norm(tape.x, block.norm1, rule.eps) : tape.x;
  const RowVector b_v = block.b_qkv.size() > 0 ? RowVector(block.b_qkv.tail(d_attn)) : RowVector();
  const Matrix d_xn = gamma_linear_backward(xn, block.w_qkv.bottomRows(d_attn), b_v, d_v, gamma);  // (n_tokens, d_model)
  Matrix d_input = d_mid;
  through_norm_add(tape.x, block.norm1, rule.eps, d_xn, d_input);
  return d_input;
}

// SigLIP's probe head, d_pooled (1, d) → d_tokens (n_tokens, d): pooled = y + fc2(GELU(fc1(LN(y)))),
// y = [a_h·V_h]·W_outᵀ + b_out, V = tokens·W_Vᵀ + b_V; the probe's attention a_h a constant, as
// the encoder's, and its query reads no token.
Matrix probe_lrp(const VitModel& model, const Matrix& tokens, const RowVector& d_pooled, float gamma) {
  const ProbeHead& p = model.probe_head;
  ProbeTape tape;
  const ProbePooling forward = probe_pooling(model, tokens, &tape);
  const Eigen::Index d = model.d_model(), d_head = d / model.n_heads;
  Matrix activated = tape.pre_gelu;  // (1, d_mlp)
  gelu_inplace(activated, model.gelu);
  Matrix d_hidden = gamma_linear_backward(activated, p.w_fc2, p.b_fc2, Matrix(d_pooled), gamma);  // (1, d_mlp)
  gelu_identity_inplace(d_hidden, tape.pre_gelu, model.gelu);
  const Matrix d_norm = gamma_linear_backward(layer_norm(tape.y, p.norm, model.eps), p.w_fc1, p.b_fc1, d_hidden, gamma);
  Matrix d_y = d_pooled;  // (1, d) the residual path
  layer_norm_identity_add(tape.y, p.norm, model.eps, d_norm, d_y);
  Matrix heads(1, d);  // (1, d) the heads' outputs a_h·V_h, out_proj's input
  for (int h = 0; h < model.n_heads; ++h)
    heads.middleCols(h * d_head, d_head) = forward.attention[static_cast<std::size_t>(h)] * tape.v.middleCols(h * d_head, d_head);
  const Matrix d_heads = gamma_linear_backward(heads, p.w_out, p.b_out, d_y, gamma);  // (1, d)
  Matrix d_v(tokens.rows(), d);
  for (int h = 0; h < model.n_heads; ++h) {
    const Matrix a_t = forward.attention[static_cast<std::size_t>(h)].transpose();  // (n_tokens, 1)
    // a_hᵀ (n_tokens, 1) · d_o (1, d_head) → ∂V_h (n_tokens, d_head)
    gemm_ab(d_v.middleCols(h * d_head, d_head), a_t, d_heads.middleCols(h * d_head, d_head));
  }
  const RowVector b_v = p.b_qkv.size() > 0 ? RowVector(p.b_qkv.tail(d)) : RowVector();
  return gamma_linear_backward(tokens, p.w_qkv.bottomRows(d), b_v, d_v, gamma);
}

// The start of the backward at the pooled row p (d_pool) for y_c:
//   a linear head, y_c = w_c·p + b_c: the Gamma rule on that one output, from d_y = 1;
//   zero-shot texts, y_c = s·t_c·u/‖u‖ + bias: ‖u‖ a constant, d_u = s·t_c/‖u‖, then back
//   through w_embed (a linear layer: the Gamma rule) when the model has one.
RowVector pooled_row_lrp(const VitModel& model, const RowVector& pooled, int c, float gamma, float weight = 1.0f) {
  if (!model.zero_shot.present()) {
    const RowVector b = model.b_head.size() > 0 ? RowVector(model.b_head.segment(c, 1)) : RowVector();
    return gamma_linear_backward(Matrix(pooled), model.w_head.row(c), b, Matrix::Constant(1, 1, weight), gamma);
  }
  const ZeroShotHead& head = model.zero_shot;
  const RowVector u = unnormalized_embedding(model, pooled);  // (d_embed)
  const double norm = u.cast<double>().norm();
  if (norm == 0.0) return RowVector::Zero(pooled.size());
  const RowVector d_u = static_cast<float>(std::exp(static_cast<double>(head.logit_scale)) / norm) * head.classes.row(c);
  if (model.w_embed.size() == 0) return d_u;
  return gamma_linear_backward(Matrix(pooled), model.w_embed, RowVector(), Matrix(d_u), gamma);
}

// d/d(the tokens after the final norm) (n_tokens, d_model) for y_c, per pooling (vit_head.hpp).
Matrix head_lrp(const VitModel& model, const Matrix& t, int c, float gamma) {
  Matrix d_t = Matrix::Zero(t.rows(), t.cols());
  const Eigen::Index d = t.cols(), first = model.first_patch_token(), n = t.rows() - first;
  const bool distilled = model.pooling == Pooling::class_and_dist && !model.zero_shot.present();
  if (distilled) {  // y = ½(head(t[0]) + head_dist(t[1]))
    d_t.row(0) = pooled_row_lrp(model, t.row(0), c, gamma, 0.5f);
    const RowVector b = model.b_head_dist.size() > 0 ? RowVector(model.b_head_dist.segment(c, 1)) : RowVector();
    d_t.row(1) = gamma_linear_backward(Matrix(t.row(1)), model.w_head_dist.row(c), b, Matrix::Constant(1, 1, 0.5f), gamma);
    return d_t;
  }
  const RowVector pooled = pooled_features(model, t);
  const RowVector d_pooled = pooled_row_lrp(model, pooled, c, gamma);  // (d_pool)
  switch (model.pooling) {
    case Pooling::class_token:
    case Pooling::class_and_dist:
      d_t.row(0) = d_pooled;
      break;
    case Pooling::patch_mean: {  // p = fc_norm(mean of t[first…]); the mean is linear
      RowVector d_mean = d_pooled;
      if (model.fc_norm.present()) {
        const Matrix mean = (t.bottomRows(n).cast<double>().colwise().sum() / static_cast<double>(n)).cast<float>();
        Matrix through = Matrix::Zero(1, d);
        layer_norm_identity_add(mean, model.fc_norm, model.eps, Matrix(d_pooled), through);
        d_mean = through;
      }
      d_t.bottomRows(n).rowwise() = d_mean / static_cast<float>(n);
      break;
    }
    case Pooling::class_and_patch_mean:
      d_t.row(0) = d_pooled.head(d);
      d_t.bottomRows(n).rowwise() = d_pooled.tail(d) / static_cast<float>(n);
      break;
    case Pooling::probe:
      return probe_lrp(model, t, d_pooled, gamma);
  }
  return d_t;
}

// R over the patches (n_patches, 3·P·P), each row (c, y, x) → the pixels summed over the
// colour channels (grid_h·P, grid_w·P) and each patch's sum (grid_h, grid_w).
LrpMaps pixel_maps(const Matrix& r, int patch, int grid_h, int grid_w) {
  LrpMaps out;
  out.pixels = Matrix::Zero(Eigen::Index{grid_h} * patch, Eigen::Index{grid_w} * patch);
  out.patches = Matrix::Zero(grid_h, grid_w);
  const Eigen::Index area = Eigen::Index{patch} * patch;
  for (Eigen::Index j = 0; j < r.rows(); ++j) {
    const Eigen::Index gy = j / grid_w, gx = j % grid_w;
    for (Eigen::Index ch = 0; ch < 3; ++ch)
      for (Eigen::Index k = 0; k < area; ++k) out.pixels(gy * patch + k / patch, gx * patch + k % patch) += r(j, ch * area + k);
    out.patches(gy, gx) = out.pixels.block(gy * patch, gx * patch, patch, patch).sum();
  }
  return out;
}

}  // namespace

LrpMaps lrp_maps(const VitModel& model, const ForwardTape& tape, const LrpSettings& s, int grid_h, int grid_w) {
  if (!model.has_classifier()) throw Error("the model has no classifier, so no class logit to explain");
  if (s.class_index < 0 || s.class_index >= model.n_classes())
    throw Error("class " + std::to_string(s.class_index) + " is not one of the model's " +
                std::to_string(model.n_classes()) + " classes");
  const Eigen::Index n_patches = Eigen::Index{grid_h} * grid_w;
  if (static_cast<int>(tape.blocks.size()) != model.n_layers() || tape.patches.rows() != n_patches)
    throw Error("the forward's tape does not hold this image's blocks and patches");  // a caller's bug
  const Matrix t = model.final_norm.present() ? layer_norm(tape.x_out, model.final_norm, model.eps) : tape.x_out;
  const Matrix d_t = head_lrp(model, t, s.class_index, s.gamma_linear);  // (n_tokens, d_model)
  Matrix d_x = Matrix::Zero(t.rows(), t.cols());
  through_norm_add(tape.x_out, model.final_norm, model.eps, d_t, d_x);
  const BlockRule rule = block_rule(model, true);
  for (int l = model.n_layers() - 1; l >= 0; --l)
    d_x = block_lrp(rule, model.blocks[static_cast<std::size_t>(l)], tape.blocks[static_cast<std::size_t>(l)], d_x,
                    s.gamma_linear);
  if (model.norm_pre.present()) {  // d_x is at norm_pre's output
    Matrix before = Matrix::Zero(d_x.rows(), d_x.cols());
    layer_norm_identity_add(tape.embedded, model.norm_pre, model.eps, d_x, before);
    d_x = std::move(before);
  }
  // the patch rows' gradient (n_patches, d_model) → the patches' (n_patches, 3·P·P); the other
  // tokens and the position embeddings are no pixels: what they hold stays there
  const Matrix d_patches =
      gamma_linear_backward(tape.patches, model.w_patch, model.b_patch, d_x.bottomRows(n_patches), s.gamma_conv);
  return pixel_maps(tape.patches.array() * d_patches.array(), model.patch_size, grid_h, grid_w);
}

}  // namespace vitattn
