#include "vit_head.hpp"

#include <cmath>

#include "attention.hpp"
#include "error.hpp"
#include "layers.hpp"

namespace vitattn {
namespace {

// The mean of the patch tokens: tokens (n_tokens, d_model) → (d_model), in double, so the
// sum's order and rounding do not depend on the number of patches' parity or the vector width.
RowVector patch_mean(const VitModel& model, const Matrix& tokens) {
  const Eigen::Index first = model.first_patch_token(), n = tokens.rows() - first;
  if (n <= 0) throw Error("no patch tokens to pool");
  const Eigen::RowVectorXd sum = tokens.bottomRows(n).cast<double>().colwise().sum();
  return (sum / static_cast<double>(n)).cast<float>();
}

// row (d_in) · wᵀ (d_in, d_out) + b → (d_out)
RowVector apply_linear(const RowVector& row, ConstMatrixView w, const RowVector& b) {
  return linear(Matrix(row), w, b).row(0);
}

std::string dims(Eigen::Index rows, Eigen::Index cols) {
  // Appended piece by piece: GCC 12's -O3 -Wrestrict misreads the operator+ chain here.
  std::string s = "[";
  s += std::to_string(rows);
  s += ", ";
  s += std::to_string(cols);
  s += "]";
  return s;
}

// Pooling::probe's weights against d_model and the head count.
void validate_probe_head(const VitModel& m, const std::string& source, bool values) {
  const ProbeHead& p = m.probe_head;
  if (m.pooling != Pooling::probe) {
    if (p.present()) throw Error(source + ": a probe head without probe pooling");
    return;
  }
  if (!p.present()) throw Error(source + ": probe pooling needs the probe head");
  const Eigen::Index d = m.d_model(), d_mlp = p.w_fc1.rows();
  const auto check = [&](const std::string& name, ConstMatrixView w, Eigen::Index rows, Eigen::Index cols) {
    if (w.rows() != rows || w.cols() != cols)
      throw Error(source + ": " + name + " is " + dims(w.rows(), w.cols()) + ", expected " + dims(rows, cols));
    if (values && !w.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  };
  const auto check_row = [&](const std::string& name, const RowVector& v, Eigen::Index n, bool optional) {
    if (optional && v.size() == 0) return;
    if (v.size() != n)
      throw Error(source + ": " + name + " is [" + std::to_string(v.size()) + "], expected [" + std::to_string(n) + "]");
    if (values && !v.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  };
  if (m.n_heads <= 0 || d % m.n_heads != 0) throw Error(source + ": the probe head's heads do not divide d_model");
  check_row("probe", p.probe, d, false);
  check("probe attention in_proj weight", p.w_qkv, 3 * d, d);
  check_row("probe attention in_proj bias", p.b_qkv, 3 * d, true);
  check("probe attention out_proj weight", p.w_out, d, d);
  check_row("probe attention out_proj bias", p.b_out, d, true);
  check_row("probe layernorm weight", p.norm.weight, d, false);
  check_row("probe layernorm bias", p.norm.bias, d, false);
  if (d_mlp == 0) throw Error(source + ": the probe head's MLP has no hidden units");
  check("probe mlp fc1 weight", p.w_fc1, d_mlp, d);
  check_row("probe mlp fc1 bias", p.b_fc1, d_mlp, true);
  check("probe mlp fc2 weight", p.w_fc2, d, d_mlp);
  check_row("probe mlp fc2 bias", p.b_fc2, d, true);
}

}  // namespace

std::string no_classifier_reason(const VitModel& model) {
  if (model.has_classifier()) return "";
  if (model.pooling == Pooling::probe)
    return "SigLIP's zero-shot classes need its text tower and the texts to rank";
  // A CLIP image tower: a projection to the joint embedding, or CLIP's norm before the first block.
  if (model.w_embed.size() > 0 || model.norm_pre.present())
    return "CLIP's zero-shot classes need its text tower and the texts to rank";
  return "";
}

std::string no_classifier_note(const VitModel& model) {
  const std::string why = no_classifier_reason(model);
  return why.empty() ? why : "; " + why;
}

RowVector l2_normalized(const RowVector& v) {
  const double norm = v.cast<double>().norm();
  return norm > 0 ? RowVector((v.cast<double>() / norm).cast<float>()) : v;
}

ProbePooling probe_pooling(const VitModel& model, const Matrix& tokens, ProbeTape* tape) {
  const ProbeHead& p = model.probe_head;
  if (!p.present()) throw Error("the model has no probe head");
  const Eigen::Index d = model.d_model();
  const int n_heads = model.n_heads;
  const Eigen::Index d_head = d / n_heads;
  const auto bias = [&](Eigen::Index j) { return p.b_qkv.size() ? RowVector(p.b_qkv.segment(j * d, d)) : RowVector(); };
  ProbeTape local;
  ProbeTape& t = tape ? *tape : local;
  // probe (1, d) · W_Qᵀ (d, d) → q (1, d); tokens (n_tokens, d) · W_Kᵀ, W_Vᵀ → k, v (n_tokens, d)
  t.q = linear(Matrix(p.probe), p.w_qkv.middleRows(0, d), bias(0));
  t.k = linear(tokens, p.w_qkv.middleRows(d, d), bias(1));
  t.v = linear(tokens, p.w_qkv.middleRows(2 * d, d), bias(2));
  ProbePooling out;
  Matrix heads(1, d);  // (1, d) every head's output side by side
  const float s = 1.0f / std::sqrt(static_cast<float>(d_head));
  for (int h = 0; h < n_heads; ++h) {
    // s·q_h (1, d_head) · k_hᵀ (d_head, n_tokens) → (1, n_tokens)
    Matrix a = s * t.q.middleCols(h * d_head, d_head) * t.k.middleCols(h * d_head, d_head).transpose();
    softmax_rows(a);
    // a (1, n_tokens) · v_h (n_tokens, d_head) → (1, d_head)
    heads.middleCols(h * d_head, d_head) = a * t.v.middleCols(h * d_head, d_head);
    out.attention.push_back(std::move(a));
  }
  t.y = linear(heads, p.w_out, p.b_out);  // (1, d)
  t.pre_gelu = linear(layer_norm(t.y, p.norm, model.eps), p.w_fc1, p.b_fc1);  // (1, d_mlp)
  Matrix hidden = t.pre_gelu;
  gelu_inplace(hidden, model.gelu);
  out.pooled = (t.y + linear(hidden, p.w_fc2, p.b_fc2)).row(0);  // (d)
  return out;
}

RowVector pooled_features(const VitModel& model, const Matrix& tokens) {
  switch (model.pooling) {
    case Pooling::probe:
      return probe_pooling(model, tokens).pooled;
    case Pooling::class_token:
    case Pooling::class_and_dist:
      return tokens.row(0);
    case Pooling::patch_mean: {
      const Matrix mean = patch_mean(model, tokens);  // (1, d_model)
      return model.fc_norm.present() ? RowVector(layer_norm(mean, model.fc_norm, model.eps).row(0)) : RowVector(mean);
    }
    case Pooling::class_and_patch_mean: {
      RowVector both(2 * tokens.cols());  // [class token, mean of the patches]
      both << tokens.row(0), patch_mean(model, tokens);
      return both;
    }
  }
  throw Error("unknown pooling");
}

RowVector classifier_logits(const VitModel& model, const Matrix& tokens) {
  if (model.zero_shot.present()) return zero_shot_logits(model.zero_shot, image_embedding(model, tokens));
  // pooled (d_pool) · w_headᵀ (d_pool, n_classes) → logits (n_classes)
  RowVector logits = apply_linear(pooled_features(model, tokens), model.w_head, model.b_head);
  if (model.pooling == Pooling::class_and_dist) {
    // distillation token (d_model) · w_head_distᵀ (d_model, n_classes), averaged with the class token's
    const RowVector dist = apply_linear(tokens.row(1), model.w_head_dist, model.b_head_dist);
    logits = (logits + dist) * 0.5f;
  }
  return logits;
}

RowVector unnormalized_embedding(const VitModel& model, const RowVector& pooled) {
  if (model.w_embed.size() == 0) return pooled;  // SigLIP: the probe's output itself
  // pooled (d_model) · w_embedᵀ (d_model, d_embed) → (d_embed)
  return apply_linear(pooled, model.w_embed, RowVector());
}

RowVector image_embedding(const VitModel& model, const Matrix& tokens) {
  return l2_normalized(unnormalized_embedding(model, pooled_features(model, tokens)));
}

Eigen::Index image_embedding_width(const VitModel& model) {
  if (!model.has_image_embedding()) return 0;
  return model.w_embed.size() > 0 ? model.w_embed.rows() : model.d_model();
}

void validate_head(const VitModel& m, const std::string& source, bool values) {
  const Eigen::Index d = m.d_model();
  const auto check = [&](const std::string& name, ConstMatrixView w, Eigen::Index rows, Eigen::Index cols) {
    if (w.rows() != rows || w.cols() != cols)
      throw Error(source + ": " + name + " is " + dims(w.rows(), w.cols()) + ", expected " + dims(rows, cols));
    if (values && !w.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  };
  const auto check_row = [&](const std::string& name, const RowVector& v, Eigen::Index n) {
    if (v.size() == 0) return;
    if (v.size() != n)
      throw Error(source + ": " + name + " is [" + std::to_string(v.size()) + "], expected [" + std::to_string(n) + "]");
    if (values && !v.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
  };
  if (m.pooling == Pooling::class_and_dist && (!m.has_dist() || !m.has_linear_head() || m.w_head_dist.size() == 0))
    throw Error(source + ": a distilled classifier needs the distillation token and both heads");
  if (m.fc_norm.present() || m.fc_norm.bias.size() > 0) {
    if (m.fc_norm.weight.size() != d || m.fc_norm.bias.size() != d)
      throw Error(source + ": fc_norm weight and bias must be [" + std::to_string(d) + "] each");
    check_row("fc_norm weight", m.fc_norm.weight, d);
    check_row("fc_norm bias", m.fc_norm.bias, d);
  }
  if (m.zero_shot.present()) {
    if (!m.has_image_embedding()) throw Error(source + ": texts as classes need an image embedding, which the model has not");
    const Eigen::Index d_embed = m.w_embed.size() > 0 ? m.w_embed.rows() : d;
    if (m.zero_shot.d_embed() != d_embed)
      throw Error(source + ": the image embedding is " + std::to_string(d_embed) + " wide and the texts' " +
                  std::to_string(m.zero_shot.d_embed()) + ": no logits between them");
  }
  if (m.has_linear_head()) {
    const Eigen::Index d_pool = m.pooling == Pooling::class_and_patch_mean ? 2 * d : d;
    // Its rows, however many, are the classes (n_classes): only its width is checked here.
    check("classifier weight", m.w_head, m.w_head.rows(), d_pool);
    check_row("classifier bias", m.b_head, m.w_head.rows());
  }
  if (m.w_head_dist.size() > 0) {
    check("distillation classifier weight", m.w_head_dist, m.w_head.rows(), d);
    check_row("distillation classifier bias", m.b_head_dist, m.w_head.rows());
  }
  if (m.w_embed.size() > 0) check("embedding projection", m.w_embed, m.w_embed.rows(), d);
  validate_probe_head(m, source, values);
}

}  // namespace vitattn
