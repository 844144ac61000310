#include "relevance.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "attention_maps.hpp"
#include "error.hpp"
#include "gemm.hpp"
#include "layers.hpp"
#include "legrad_text.hpp"
#include "lrp.hpp"
#include "vit_backward.hpp"
#include "vit_head.hpp"

namespace vitattn {
namespace {

bool wants(const std::vector<RelevanceMap>& methods, RelevanceMap m) {
  return std::find(methods.begin(), methods.end(), m) != methods.end();
}

// A layer index of a model of n_layers; negative counts from the end.
int layer_index(int layer, int n_layers, const char* what) {
  const int l = layer < 0 ? n_layers + layer : layer;
  if (l < 0 || l >= n_layers)
    throw Error(std::string(what) + " " + std::to_string(layer) + " is not one of the model's " +
                std::to_string(n_layers) + " layers");
  return l;
}

// mean over heads of A_h ⊙ G_h (n_tokens, n_tokens), then max(0, ·) when `clamp_after`; with
// clamp_before, max(0, G_h ⊙ A_h) is taken per head before the mean (Chefer's order).
Matrix weighted_heads(const std::vector<Matrix>& a, const std::vector<Matrix>& g, bool clamp_before) {
  Matrix fused = Matrix::Zero(a.front().rows(), a.front().cols());
  for (std::size_t h = 0; h < a.size(); ++h) {
    if (clamp_before) fused.array() += (a[h].array() * g[h].array()).max(0.0f);
    else fused.array() += a[h].array() * g[h].array();
  }
  fused /= static_cast<float>(a.size());
  if (!clamp_before) fused = fused.array().max(0.0f);
  return fused;
}

// The class token's row of a rollout, folded from the last layer down: r (1, n_tokens).
// The rows of R the classifier reads, as weights over the tokens (1, n_tokens): the class
// token's row e_0 for a class-token head; for a pooled head (vit_head.hpp) the rows its pooling
// averages: ½(e_0 + e_1) for distilled DeiT, the patch rows 1/n each for a patch mean, and
// ½e_0 + the patch rows ½/n each for [class token, patch mean]. The maps are then R's rows
// weighted as the head weighs its tokens (by linearity, w·R is read off one running row).
// A probe (SigLIP) reads every token through its own attention: probe_readout.
Matrix readout_weights(const VitModel& model, Eigen::Index n_tokens) {
  Matrix w = Matrix::Zero(1, n_tokens);
  const Eigen::Index first = model.first_patch_token(), n = n_tokens - first;
  switch (model.pooling) {
    case Pooling::class_token:
    case Pooling::probe:  // full_backward_maps takes probe_readout's instead
      w(0, 0) = 1.0f;
      break;
    case Pooling::class_and_dist:
      w(0, 0) = w(0, 1) = 0.5f;
      break;
    case Pooling::patch_mean:
      w.rightCols(n).setConstant(1.0f / static_cast<float>(n));
      break;
    case Pooling::class_and_patch_mean:
      w(0, 0) = 0.5f;
      w.rightCols(n).setConstant(0.5f / static_cast<float>(n));
      break;
  }
  return w;
}

// Pooling::probe's readout rows (1, n_tokens) for y_c: the probe's attention over the final
// tokens, fused with its gradient as each method fuses a layer's ([chefer, grad_rollout]). The
// probe is a last attention layer whose one query is no token, so Chefer's rule 10 for attention
// between two sets of tokens (Chefer, Gur, Wolf, "Generic Attention-model Explainability";
// Transformer-MM-Explainability's apply_mm_attention_rules: R_qk += (R_qq)ᵀ·Ā·R_kk, R_qq = 1 for
// the one query, R_qk from 0) makes Ā_probe·R the probe's row: Ā_probe is the readout of the
// encoder's R. R is taken as it is, without the rule's optional row normalisation of R_kk − I
// (its normalize_self_attention=False), so the probe's map is read off R as every pooling's is.
std::array<Matrix, 2> probe_readout(const VitModel& model, const ForwardTape& tape, int c) {
  ProbeGradients probe;
  logit_gradient(model, tape.x_out, c, &probe);
  return {weighted_heads(probe.attention, probe.d_attention, true),
          weighted_heads(probe.attention, probe.d_attention, false)};
}

struct RowRollout {
  Matrix r;  // (1, n_tokens) the readout's row of R, from w·I
  explicit RowRollout(Matrix readout) : r(std::move(readout)) {}
  // r ← r·a: gradient rollout's R ← a·R
  void multiply(const Matrix& a) {
    const Matrix before = r;
    // r (1, n_tokens) · a (n_tokens, n_tokens) → r
    gemm_ab(r, before, a);
  }
};

// Grad-CAM on X = norm1's output (n_tokens, d_model) and its gradient: map over P = max(0, X_P·w),
// w = mean over P of ∂y/∂X_P (d_model).
Matrix gradcam_map(const Matrix& x, const Matrix& d_x, int first_patch, int grid_h, int grid_w) {
  const Eigen::Index n_patches = Eigen::Index{grid_h} * grid_w;
  const Matrix w = d_x.middleRows(first_patch, n_patches).colwise().mean();  // (1, d_model)
  Matrix cam(n_patches, 1);
  // X_P (n_patches, d_model) · wᵀ (d_model, 1) → (n_patches, 1)
  gemm_abt(cam, x.middleRows(first_patch, n_patches), w);
  Matrix map(grid_h, grid_w);
  for (Eigen::Index j = 0; j < n_patches; ++j) map(j / grid_w, j % grid_w) = std::max(cam(j, 0), 0.0f);
  return map;
}

// The maps of chefer, grad_rollout and gradcam (those asked for) into `maps`, from one backward of y_c.
void full_backward_maps(const VitModel& model, const ForwardTape& tape, const std::vector<RelevanceMap>& methods,
                        const RelevanceSettings& s, int last, int grid_h, int grid_w, RelevanceMaps& maps) {
  const int chefer_from = first_layer(s.chefer_from, model.n_layers(), "Chefer's first layer");
  const Eigen::Index n_tokens = tape.x_out.rows();
  const int first = model.first_patch_token();
  std::array<Matrix, 2> readout{readout_weights(model, n_tokens), readout_weights(model, n_tokens)};
  if (model.pooling == Pooling::probe) readout = probe_readout(model, tape, s.class_index);
  RowRollout chefer(readout[0]), grad_rollout(readout[1]);
  encoder_backward(model, tape, s.class_index, s.scale, [&](int l, const BlockGradients& g) {
    if (l > last) return;
    const std::vector<Matrix>& a = tape.blocks[static_cast<std::size_t>(l)].attention;
    if (wants(methods, &RelevanceMaps::chefer) && l >= chefer_from) chefer_row_step(chefer.r, a, g.d_attention);
    if (wants(methods, &RelevanceMaps::grad_rollout))
      grad_rollout.multiply(rollout_step(weighted_heads(a, g.d_attention, false), s.discard_ratio));
    if (wants(methods, &RelevanceMaps::gradcam) && l == last)
      maps.gradcam = gradcam_map(norm1_output(model, l, tape.blocks[static_cast<std::size_t>(l)]), g.d_norm1, first,
                                 grid_h, grid_w);
  });
  if (wants(methods, &RelevanceMaps::chefer)) maps.chefer = class_token_map(chefer.r, first, grid_h, grid_w);
  if (wants(methods, &RelevanceMaps::grad_rollout))
    maps.grad_rollout = class_token_map(grad_rollout.r, first, grid_h, grid_w);
}

// LeGrad: Σ over l = from … last of E_l, each from one block's backward of s_l.
Matrix legrad_map(const VitModel& model, const ForwardTape& tape, const RelevanceSettings& s, int from, int last,
                  int grid_h, int grid_w) {
  Matrix sum = Matrix::Zero(1, tape.x_out.rows());
  const BlockRule rule = block_rule(model, s.scale);
  BlockGradients g;
  BackwardBuffers buf;
  for (int l = from; l <= last; ++l) {
    // the stream after block l: the next block's input, or the last block's output
    const Matrix& x_after = l + 1 < model.n_layers() ? tape.blocks[static_cast<std::size_t>(l + 1)].x : tape.x_out;
    block_backward(rule, model.blocks[static_cast<std::size_t>(l)], tape.blocks[static_cast<std::size_t>(l)],
                   logit_gradient(model, x_after, s.class_index), g, buf);
    sum += legrad_layer(g.d_attention);
  }
  return class_token_map(sum, model.first_patch_token(), grid_h, grid_w);
}

// LeGrad with a text as its target (legrad_text.hpp): the variant of the model's pooling, on the
// class's text embedding; SigLIP's with its empty-prompt correction when the texts carry one.
Matrix text_legrad_map(const VitModel& model, const ForwardTape& tape, const RelevanceSettings& s, int grid_h,
                       int grid_w) {
  const ZeroShotHead& head = model.zero_shot;
  if (s.class_index < 0 || s.class_index >= head.n_classes())
    throw Error("class " + std::to_string(s.class_index) + " is not one of the " + std::to_string(head.n_classes()) +
                " texts");
  const RowVector text = head.classes.row(s.class_index);
  TextLegradSettings ts;
  ts.first_layer = s.legrad_from;
  ts.scale = s.scale;
  if (model.pooling != Pooling::probe) return legrad_clip_text(model, tape, text, ts, grid_h, grid_w);
  std::optional<EmptyPromptCorrection> correction;
  if (head.legrad_empty_prompt.size() > 0)
    correction = EmptyPromptCorrection{head.legrad_empty_prompt, head.legrad_empty_threshold};
  return legrad_siglip_text(model, tape, text, ts, correction, grid_h, grid_w);
}

}  // namespace

Matrix legrad_layer(const std::vector<Matrix>& d_attention) {
  Matrix e = Matrix::Zero(1, d_attention.front().cols());
  for (const Matrix& g : d_attention) e += g.array().max(0.0f).matrix().colwise().sum();
  e /= static_cast<float>(d_attention.size() * static_cast<std::size_t>(d_attention.front().rows()));
  return e;
}

int first_layer(int from, int n_layers, const char* what) {
  // −K means the last K layers: on a model of fewer, every layer (the default −2 on one block).
  return layer_index(std::max(from, -n_layers), n_layers, what);
}

void chefer_row_step(Matrix& r, const std::vector<Matrix>& attention, const std::vector<Matrix>& d_attention) {
  const Matrix a_bar = weighted_heads(attention, d_attention, true);  // (n_tokens, n_tokens)
  const Matrix before = r;
  // r (1, n_tokens) · Ā (n_tokens, n_tokens), added onto r
  gemm_ab(r, before, a_bar, 1.0f, Accumulate::yes);
}

std::vector<Matrix> relevance_maps(const VitModel& model, const ForwardTape& tape,
                                   const std::vector<RelevanceMap>& methods, const RelevanceSettings& settings,
                                   int grid_h, int grid_w, Matrix* lrp_pixels) {
  const int last = layer_index(settings.last_layer, model.n_layers(), "layer");
  RelevanceMaps all;
  if (wants(methods, &RelevanceMaps::chefer) || wants(methods, &RelevanceMaps::grad_rollout) ||
      wants(methods, &RelevanceMaps::gradcam))
    full_backward_maps(model, tape, methods, settings, last, grid_h, grid_w, all);
  if (wants(methods, &RelevanceMaps::legrad)) {
    if (model.zero_shot.present()) {
      all.legrad = text_legrad_map(model, tape, settings, grid_h, grid_w);
    } else {
      const int from = std::min(first_layer(settings.legrad_from, model.n_layers(), "LeGrad's first layer"), last);
      all.legrad = legrad_map(model, tape, settings, from, last, grid_h, grid_w);
    }
  }
  if (wants(methods, &RelevanceMaps::lrp)) {
    LrpMaps lrp = lrp_maps(model, tape, {settings.class_index, settings.lrp_gamma_linear, settings.lrp_gamma_conv},
                           grid_h, grid_w);
    all.lrp = std::move(lrp.patches);
    if (lrp_pixels) *lrp_pixels = std::move(lrp.pixels);
  }
  std::vector<Matrix> maps;
  for (RelevanceMap m : methods) maps.push_back(all.*m);
  return maps;
}

}  // namespace vitattn
