#include "legrad_text.hpp"

#include <string>

#include "attention_maps.hpp"
#include "error.hpp"
#include "gemm.hpp"
#include "layers.hpp"
#include "probe_backward.hpp"
#include "relevance.hpp"
#include "vit_backward.hpp"
#include "vit_head.hpp"

namespace vitattn {
namespace {

// ∂(t · e/‖e‖)/∂e = (t − (t·ê)·ê)/‖e‖, ê = e/‖e‖, in double; zero for e = 0 (whose n(e) is 0).
RowVector cosine_gradient(const RowVector& t, const RowVector& e) {
  const Eigen::RowVectorXd ed = e.cast<double>(), td = t.cast<double>();
  const double norm = ed.norm();
  if (norm == 0) return RowVector::Zero(e.size());
  const Eigen::RowVectorXd unit = ed / norm;
  return ((td - td.dot(unit) * unit) / norm).cast<float>();
}

// The stream after block l (n_tokens, d_model): the next block's input, or the last block's output.
const Matrix& block_output(const VitModel& model, const ForwardTape& tape, int l) {
  return l + 1 < model.n_layers() ? tape.blocks[static_cast<std::size_t>(l + 1)].x : tape.x_out;
}

void check_tape(const VitModel& model, const ForwardTape& tape) {
  if (static_cast<int>(tape.blocks.size()) != model.n_layers())
    throw Error("the forward's tape has " + std::to_string(tape.blocks.size()) + " blocks, the model " +
                std::to_string(model.n_layers()));
}

void check_width(const RowVector& v, Eigen::Index width, const char* what) {
  if (v.size() != width)
    throw Error(std::string(what) + " has " + std::to_string(v.size()) + " values; the model's image embedding " +
                std::to_string(width));
}

// CLIP's s_l = t · n(w_embed · LN_f(mean of x)): ∂s_l/∂x (n_tokens, d_model), every row alike.
Matrix clip_similarity_gradient(const VitModel& model, const Matrix& x, const RowVector& text) {
  const Matrix mean = (x.cast<double>().colwise().sum() / static_cast<double>(x.rows())).cast<float>();  // (1, d)
  const bool norm = model.final_norm.present();
  const Matrix z = norm ? layer_norm(mean, model.final_norm, model.eps) : mean;  // (1, d)
  // z (1, d) · w_embedᵀ (d, d_embed) → e (1, d_embed)
  const Matrix e = linear(z, model.w_embed, RowVector());
  const Matrix d_e = cosine_gradient(text, e.row(0));  // (1, d_embed)
  Matrix d_mean(1, x.cols());
  // ∂e (1, d_embed) · w_embed (d_embed, d) → ∂z (1, d)
  gemm_ab(d_mean, d_e, model.w_embed);
  if (norm) {
    Matrix through = Matrix::Zero(1, x.cols());
    layer_norm_backward_add(mean, model.final_norm, model.eps, d_mean, through);
    d_mean = through;
  }
  Matrix d_x(x.rows(), x.cols());
  d_x.rowwise() = d_mean.row(0) / static_cast<float>(x.rows());
  return d_x;
}

// Σ_l E_l of SigLIP's probe for each of `texts` (1, n_tokens) each, one probe forward per layer.
std::vector<Matrix> siglip_sums(const VitModel& model, const ForwardTape& tape, int first,
                                const std::vector<const RowVector*>& texts) {
  std::vector<Matrix> sums(texts.size(), Matrix::Zero(1, tape.x_out.rows()));
  for (int l = first; l < model.n_layers(); ++l) {
    ProbeTape probe_tape;
    const ProbePooling forward = probe_pooling(model, block_output(model, tape, l), &probe_tape);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const RowVector d_pooled = cosine_gradient(*texts[i], forward.pooled);
      sums[i] += legrad_layer(probe_backward(model, forward, probe_tape, d_pooled).d_attention);
    }
  }
  return sums;
}

// The reference's correction: map = 0 where min-max(empty) > threshold; nothing when empty is constant.
void apply_empty_prompt_correction(const Matrix& empty, float threshold, Matrix& map) {
  const float lo = empty.minCoeff(), hi = empty.maxCoeff();
  if (!(hi > lo)) return;
  for (Eigen::Index i = 0; i < map.rows(); ++i)
    for (Eigen::Index j = 0; j < map.cols(); ++j)
      if ((empty(i, j) - lo) / (hi - lo) > threshold) map(i, j) = 0.0f;
}

}  // namespace

Matrix legrad_clip_text(const VitModel& model, const ForwardTape& tape, const RowVector& text,
                        const TextLegradSettings& settings, int grid_h, int grid_w) {
  if (model.w_embed.size() == 0) throw Error("LeGrad for a text needs the model's image projection (CLIP's proj)");
  check_width(text, model.w_embed.rows(), "the text embedding");
  check_tape(model, tape);
  const int first = first_layer(settings.first_layer, model.n_layers(), "LeGrad's first layer");
  Matrix sum = Matrix::Zero(1, tape.x_out.rows());
  BlockGradients g;
  BackwardBuffers buf;
  const BlockRule rule = block_rule(model, settings.scale);
  for (int l = first; l < model.n_layers(); ++l) {
    const Matrix d_x = clip_similarity_gradient(model, block_output(model, tape, l), text);
    const auto i = static_cast<std::size_t>(l);
    block_backward(rule, model.blocks[i], tape.blocks[i], d_x, g, buf);
    sum += legrad_layer(g.d_attention);
  }
  return class_token_map(sum, model.first_patch_token(), grid_h, grid_w);
}

Matrix legrad_siglip_text(const VitModel& model, const ForwardTape& tape, const RowVector& text,
                          const TextLegradSettings& settings, const std::optional<EmptyPromptCorrection>& correction,
                          int grid_h, int grid_w) {
  if (model.pooling != Pooling::probe) throw Error("LeGrad's SigLIP variant needs a model pooled by a probe (SigLIP)");
  check_width(text, model.d_model(), "the text embedding");
  if (correction) check_width(correction->embedding, model.d_model(), "the empty prompt's embedding");
  check_tape(model, tape);
  const int first = first_layer(settings.first_layer, model.n_layers(), "LeGrad's first layer");
  std::vector<const RowVector*> texts{&text};
  if (correction) texts.push_back(&correction->embedding);
  const std::vector<Matrix> sums = siglip_sums(model, tape, first, texts);
  const int first_patch = model.first_patch_token();
  Matrix map = class_token_map(sums[0], first_patch, grid_h, grid_w);
  if (correction)
    apply_empty_prompt_correction(class_token_map(sums[1], first_patch, grid_h, grid_w), correction->threshold, map);
  return map;
}

}  // namespace vitattn
