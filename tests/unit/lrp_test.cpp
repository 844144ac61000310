// AttnLRP's rules (core/lrp.hpp) on examples worked by hand: zennit's Gamma rule on a 2×3 layer,
// its reduction to the plain gradient at γ = 0 without a bias, and the identity rules of GELU and
// LayerNorm. The whole map is checked against a torch implementation of the rules in
// tests/oracle/test_lrp.py.
#include "core/lrp.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/vit.hpp"
#include "core/zero_shot.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

Matrix matrix(Eigen::Index rows, Eigen::Index cols, std::initializer_list<float> values) {
  Matrix m(rows, cols);
  auto it = values.begin();
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = *it++;
  return m;
}

// x = [1, −2, 0.5], W = [[1, −1, 2], [−3, 0.5, 1]], b = [0.5, −1], γ = 0.5, d_z = [1, 2]:
//   z = [4.5, −4.5], R_z = z ⊙ d_z = [4.5, −9]
//   W↑ = [[1.5, −1, 3], [−3, 0.75, 1.5]], W↓ = [[1, −1.5, 2], [−4.5, 0.5, 1]], b↑ = [0.75, −1], b↓ = [0.5, −1.5]
//   output 0 (z > 0): z↑ = x⁺·W↑₀ + b↑₀ + x⁻·W↓₀ = 3 + 0.75 + 3 = 6.75, c↑ = 4.5/6.75 = 2/3
//   output 1 (z < 0): z↓ = x⁺·W↓₁ + b↓₁ + x⁻·W↑₁ = −4 − 1.5 − 1.5 = −7, c↓ = −9/−7 = 9/7
//   d_x₀ (x > 0) = c↑·W↑₀₀ + c↓·W↓₁₀ = 1 − 81/14 = −67/14
//   d_x₁ (x < 0) = c↑·W↓₀₁ + c↓·W↑₁₁ = −1 + 27/28 = −1/28
//   d_x₂ (x > 0) = c↑·W↑₀₂ + c↓·W↓₁₂ = 2 + 9/7 = 23/7
// Σ x ⊙ d_x = −43/14 = Σ R_z minus the biases' shares (4.5·0.75/6.75 = 0.5 and −9·−1.5/−7 = −27/14).
TEST(GammaRule, HandWorkedTwoByThree) {
  const Matrix x = matrix(1, 3, {1.0f, -2.0f, 0.5f});
  const Matrix w = matrix(2, 3, {1.0f, -1.0f, 2.0f, -3.0f, 0.5f, 1.0f});
  const RowVector b = matrix(1, 2, {0.5f, -1.0f});
  const Matrix d_z = matrix(1, 2, {1.0f, 2.0f});
  const Matrix d_x = gamma_linear_backward(x, w, b, d_z, 0.5f);
  ASSERT_EQ(d_x.rows(), 1);
  ASSERT_EQ(d_x.cols(), 3);
  EXPECT_NEAR(d_x(0, 0), -67.0 / 14.0, 1e-5);
  EXPECT_NEAR(d_x(0, 1), -1.0 / 28.0, 1e-5);
  EXPECT_NEAR(d_x(0, 2), 23.0 / 7.0, 1e-5);
  EXPECT_NEAR((x.array() * d_x.array()).sum(), -43.0 / 14.0, 1e-5);
}

// An input that is exactly 0 holds no relevance and passes no gradient; an output that is
// exactly 0 has none to hand down.
TEST(GammaRule, ZeroInputsAndOutputs) {
  const Matrix x = matrix(1, 3, {1.0f, 0.0f, 2.0f});
  const Matrix w = matrix(2, 3, {1.0f, 5.0f, -0.5f, 2.0f, 1.0f, 1.0f});  // z₀ = 0
  const Matrix d_x = gamma_linear_backward(x, w, RowVector(), matrix(1, 2, {3.0f, 1.0f}), 0.25f);
  EXPECT_EQ(d_x(0, 1), 0.0f);
  // only output 1 (z = 4, all inputs ≥ 0): W↑₁ = 1.25·W₁, z↑ = 5, c↑ = 4/5
  EXPECT_NEAR(d_x(0, 0), 0.8 * 2.5, 1e-6);
  EXPECT_NEAR(d_x(0, 2), 0.8 * 1.25, 1e-6);
}

// γ = 0 and no bias: R_z/z = d_z, so the rule is the plain gradient d_z·W (LRP-0), up to the stabiliser.
TEST(GammaRule, GammaZeroWithoutBiasIsTheGradient) {
  const Matrix x = matrix(2, 3, {0.3f, -1.2f, 0.7f, -0.4f, 0.9f, 2.0f});
  const Matrix w = matrix(2, 3, {1.0f, -1.0f, 2.0f, -3.0f, 0.5f, 1.0f});
  const Matrix d_z = matrix(2, 2, {0.6f, -1.5f, 2.0f, 0.25f});
  const Matrix d_x = gamma_linear_backward(x, w, RowVector(), d_z, 0.0f);
  const Matrix expected = d_z * w;
  for (Eigen::Index i = 0; i < 2; ++i)
    for (Eigen::Index j = 0; j < 3; ++j) EXPECT_NEAR(d_x(i, j), expected(i, j), 1e-5) << i << "," << j;
}

// GELU's identity rule: R_h = h ⊙ d_h equals R_a = GELU(h) ⊙ d_a for each form.
TEST(IdentityRules, GeluHandsTheRelevanceOnWhole) {
  const Matrix h = matrix(1, 4, {-2.0f, -0.3f, 0.5f, 3.0f});
  for (Gelu kind : {Gelu::erf, Gelu::tanh, Gelu::quick}) {
    Matrix d = matrix(1, 4, {1.0f, -2.0f, 0.5f, 4.0f});
    const Matrix d_a = d;
    gelu_identity_inplace(d, h, kind);
    Matrix a = h;
    gelu_inplace(a, kind);
    for (Eigen::Index j = 0; j < 4; ++j) EXPECT_NEAR(h(0, j) * d(0, j), a(0, j) * d_a(0, j), 1e-6);
  }
}

// LayerNorm's identity rule: σ a constant, so Σ x ⊙ d_x = Σ (LN(x) − β) ⊙ d_y (the bias keeps its share).
TEST(IdentityRules, LayerNormConservesAllButTheBias) {
  const Matrix x = matrix(1, 4, {1.0f, -2.0f, 0.5f, 3.5f});
  LayerNorm norm{matrix(1, 4, {1.5f, 0.5f, -1.0f, 2.0f}), matrix(1, 4, {0.1f, -0.2f, 0.3f, 0.0f})};
  const Matrix d_y = matrix(1, 4, {0.7f, -1.1f, 2.0f, 0.4f});
  Matrix d_x = Matrix::Zero(1, 4);
  layer_norm_identity_add(x, norm, 1e-6f, d_y, d_x);
  const Matrix y = layer_norm(x, norm, 1e-6f);
  const double relevance_in = (x.array() * d_x.array()).sum();
  const double relevance_out = ((y.array() - norm.bias.array()) * d_y.array()).sum();
  EXPECT_NEAR(relevance_in, relevance_out, 1e-5);
}

// Conservation on whole models without biases, positions or class token (zero), one per head
// the backward starts from: Σ over the pixels of R = y_c (y_c − logit_bias for texts), y_c the
// forward's own logit. Covers the pools and heads the torch oracle does not reach: the patch mean
// with fc_norm, SigLIP's probe head, and texts as classes (CLIP's projection; SigLIP's bias).
enum class Head { class_token, patch_mean, probe, clip_texts, siglip_texts };

VitModel bias_free_model(Head head, std::mt19937& rng) {
  const int d = 8, p = 2, g = 3, mlp = 16, classes = 4, d_embed = 6;
  auto rnd = [&](Eigen::Index r, Eigen::Index c, float scale) { return test::random_matrix(r, c, rng, scale); };
  auto zeros = [](Eigen::Index n) { return RowVector(RowVector::Zero(n)); };
  auto ln = [&] { return LayerNorm{RowVector(rnd(1, d, 0.5f).array() + 1.0f), zeros(d)}; };
  const bool probe = head == Head::probe || head == Head::siglip_texts;
  VitModel m;
  m.patch_size = p;
  m.n_heads = 2;
  m.w_patch = rnd(d, 3 * p * p, 0.5f);
  if (!probe) m.cls_token = zeros(d);
  m.pos_prefix = probe ? 0 : 1;
  m.pos_embed = Matrix::Zero(m.pos_prefix + g * g, d);
  m.grid_h = m.grid_w = g;
  for (int l = 0; l < 2; ++l) {
    EncoderBlock b;
    b.norm1 = ln();
    b.w_qkv = rnd(3 * d, d, 0.8f);
    b.w_proj = rnd(d, d, 0.4f);
    b.b_proj = zeros(d);
    b.norm2 = ln();
    b.w_fc1 = rnd(mlp, d, 0.4f);
    b.b_fc1 = zeros(mlp);
    b.w_fc2 = rnd(d, mlp, 0.3f);
    b.b_fc2 = zeros(d);
    m.blocks.push_back(b);
  }
  m.final_norm = ln();
  if (head == Head::patch_mean) {
    m.pooling = Pooling::patch_mean;
    m.fc_norm = ln();
  }
  if (probe) {
    m.pooling = Pooling::probe;
    ProbeHead& h = m.probe_head;
    h.probe = rnd(1, d, 1.0f);
    h.w_qkv = rnd(3 * d, d, 0.8f);
    h.b_qkv = zeros(3 * d);
    h.w_out = rnd(d, d, 0.4f);
    h.b_out = zeros(d);
    h.norm = ln();
    h.w_fc1 = rnd(mlp, d, 0.4f);
    h.b_fc1 = zeros(mlp);
    h.w_fc2 = rnd(d, mlp, 0.3f);
    h.b_fc2 = zeros(d);
  }
  if (head == Head::clip_texts || head == Head::siglip_texts) {
    const Eigen::Index width = head == Head::clip_texts ? d_embed : d;
    if (head == Head::clip_texts) m.w_embed = rnd(d_embed, d, 0.5f);
    Matrix texts = rnd(classes, width, 1.0f);
    texts.rowwise().normalize();
    m.zero_shot.classes = texts;
    m.zero_shot.logit_scale = 2.0f;
    m.zero_shot.logit_bias = head == Head::siglip_texts ? -3.0f : 0.0f;
  } else {
    m.w_head = rnd(classes, d, 0.5f);
    m.b_head = zeros(classes);
  }
  m.validate("bias-free model");
  return m;
}

TEST(AttnLrp, PixelsSumToTheLogitWithoutBiases) {
  for (Head head : {Head::class_token, Head::patch_mean, Head::probe, Head::clip_texts, Head::siglip_texts}) {
    std::mt19937 rng(7 + static_cast<unsigned>(head));
    const VitModel m = bias_free_model(head, rng);
    const ImageTensor image = test::random_image(6, 6, rng, 1.0f);
    ForwardTape tape;
    ForwardOptions options;
    options.tape = &tape;
    const ForwardResult result = forward(m, image, options);
    for (int c = 0; c < 2; ++c) {
      const LrpMaps maps = lrp_maps(m, tape, {c, 0.1f, 0.25f}, 3, 3);
      ASSERT_EQ(maps.pixels.rows(), 6);
      ASSERT_EQ(maps.patches.rows(), 3);
      const double target = double{result.logits(c)} - double{m.zero_shot.present() ? m.zero_shot.logit_bias : 0.0f};
      ASSERT_GT(std::abs(target), 1e-2);  // a logit that is not 0 by itself: the check means something
      EXPECT_NEAR(maps.pixels.cast<double>().sum(), target, 1e-4 * std::max(1.0, std::abs(target)))
          << "head " << static_cast<int>(head) << ", class " << c;
      EXPECT_NEAR(maps.patches.cast<double>().sum(), maps.pixels.cast<double>().sum(), 1e-4);
    }
  }
}

}  // namespace
}  // namespace vitattn
