// The backward pass against central finite differences of the forward: ∂y_c/∂pixel through the
// whole encoder (embedding, every block, final norm, classifier), for each family's parts
// (registers, layer scale, no qkv bias, erf and tanh GELU, no final norm, SigLIP's probe head).
// The differences use nothing of the backward; PyTorch autograd checks every layer's ∂A and ∂x
// in tests/oracle/test_gradients.py (the probe's in tests/oracle/test_legrad_text.py).
#include "core/vit_backward.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/legrad_text.hpp"
#include "core/vit.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

struct Family {
  int registers = 0;
  bool layer_scale = false;
  bool qkv_bias = true;
  Gelu gelu = Gelu::erf;
  bool final_norm = true;
  bool probe = false;  // SigLIP: no class token, the classifier on the probe head's pooled row
};

RowVector row(Eigen::Index n, std::mt19937& rng, float scale) { return test::random_matrix(1, n, rng, scale); }

// Pooling::probe's weights (HF SiglipMultiheadAttentionPoolingHead) on a model of d_model d.
void add_probe_head(VitModel& m, int mlp, std::mt19937& rng) {
  const Eigen::Index d = m.d_model();
  ProbeHead& p = m.probe_head;
  m.pooling = Pooling::probe;
  p.probe = row(d, rng, 1.0f);
  p.w_qkv = test::random_matrix(3 * d, d, rng, 0.8f);
  p.b_qkv = row(3 * d, rng, 0.1f);
  p.w_out = test::random_matrix(d, d, rng, 0.4f);
  p.b_out = row(d, rng, 0.1f);
  p.norm = LayerNorm{(row(d, rng, 0.5f).array() + 1.0f).matrix(), row(d, rng, 0.1f)};
  p.w_fc1 = test::random_matrix(mlp, d, rng, 0.4f);
  p.b_fc1 = row(mlp, rng, 0.1f);
  p.w_fc2 = test::random_matrix(d, mlp, rng, 0.3f);
  p.b_fc2 = row(d, rng, 0.1f);
}

VitModel small_classifier(const Family& f, std::mt19937& rng) {
  const int d = 8, p = 2, g = 3, mlp = 16, classes = 5;
  VitModel m;
  m.patch_size = p;
  m.n_heads = 2;
  m.eps = 1e-2f;
  m.gelu = f.gelu;
  m.w_patch = test::random_matrix(d, 3 * p * p, rng, 0.5f);
  m.b_patch = row(d, rng, 0.1f);
  if (!f.probe) m.cls_token = row(d, rng, 1.0f);
  m.pos_prefix = f.probe ? 0 : 1;
  if (f.registers > 0) m.register_tokens = test::random_matrix(f.registers, d, rng);
  m.pos_embed = test::random_matrix(m.pos_prefix + g * g, d, rng, 0.2f);
  m.grid_h = m.grid_w = g;
  auto ln = [&] { return LayerNorm{(row(d, rng, 0.5f).array() + 1.0f).matrix(), row(d, rng, 0.1f)}; };
  for (int l = 0; l < 3; ++l) {
    EncoderBlock b;
    b.norm1 = ln();
    b.w_qkv = test::random_matrix(3 * d, d, rng, 0.8f);
    if (f.qkv_bias) b.b_qkv = row(3 * d, rng, 0.1f);
    b.w_proj = test::random_matrix(d, d, rng, 0.4f);
    b.b_proj = row(d, rng, 0.1f);
    b.norm2 = ln();
    b.w_fc1 = test::random_matrix(mlp, d, rng, 0.4f);
    b.b_fc1 = row(mlp, rng, 0.1f);
    b.w_fc2 = test::random_matrix(d, mlp, rng, 0.3f);
    b.b_fc2 = row(d, rng, 0.1f);
    if (f.layer_scale) b.ls1 = row(d, rng, 1.0f), b.ls2 = row(d, rng, 1.0f);
    m.blocks.push_back(b);
  }
  if (f.final_norm) m.final_norm = ln();
  if (f.probe) add_probe_head(m, mlp, rng);
  m.w_head = test::random_matrix(classes, d, rng, 0.5f);
  m.b_head = row(classes, rng, 0.1f);
  m.validate("small classifier");
  return m;
}

ImageTensor random_image(int h, int w, std::mt19937& rng) { return test::random_image(h, w, rng, 1.0f); }

double logit(const VitModel& m, const ImageTensor& image, int c) {
  return static_cast<double>(forward(m, image).logits(c));
}

// ∂y_c/∂(pixel i) from ∂y_c/∂x_0: the pixel reaches x_0 only through its patch's embedding.
double pixel_gradient(const VitModel& m, const ImageTensor& image, const Matrix& d_x0, std::size_t i) {
  const int p = m.patch_size, h = image.height, w = image.width;
  const int c = static_cast<int>(i) / (h * w), y = static_cast<int>(i) / w % h, x = static_cast<int>(i) % w;
  const int patch = (y / p) * (w / p) + x / p, col = c * p * p + (y % p) * p + x % p;
  double sum = 0;
  for (Eigen::Index d = 0; d < m.d_model(); ++d)
    sum += double{d_x0(m.first_patch_token() + patch, d)} * double{m.w_patch(d, col)};
  return sum;
}

void expect_matches_finite_differences(const Family& f, unsigned seed) {
  std::mt19937 rng(seed);
  const VitModel m = small_classifier(f, rng);
  ImageTensor image = random_image(6, 6, rng);
  const int c = 3;
  ForwardTape tape;
  ForwardOptions options;
  options.tape = &tape;
  forward(m, image, options);
  int blocks_seen = 0;
  const Matrix d_x0 = encoder_backward(m, tape, c, true, [&](int, const BlockGradients&) { ++blocks_seen; });
  EXPECT_EQ(blocks_seen, 3);
  double worst = 0, largest = 0;
  for (std::size_t i = 0; i < image.chw.size(); i += 5) {
    const float h = 1e-2f, saved = image.chw[i];
    image.chw[i] = saved + h;
    const double up = logit(m, image, c);
    image.chw[i] = saved - h;
    const double down = logit(m, image, c);
    image.chw[i] = saved;
    const double numeric = (up - down) / (2.0 * double{h});
    worst = std::max(worst, std::abs(numeric - pixel_gradient(m, image, d_x0, i)));
    largest = std::max(largest, std::abs(numeric));
  }
  ASSERT_GT(largest, 1e-2);  // the check means something: the logit does depend on the pixels
  EXPECT_LT(worst, 2e-3 * std::max(1.0, largest)) << "worst |finite difference − backward| " << worst;
}

TEST(VitBackward, MatchesFiniteDifferencesPlain) { expect_matches_finite_differences({}, 1); }
TEST(VitBackward, MatchesFiniteDifferencesRegistersLayerScale) {
  expect_matches_finite_differences({2, true, true, Gelu::erf, true}, 2);
}
TEST(VitBackward, MatchesFiniteDifferencesNoQkvBiasTanhNoFinalNorm) {
  expect_matches_finite_differences({0, false, false, Gelu::tanh, false}, 3);
}

TEST(VitBackward, MatchesFiniteDifferencesProbeHead) {
  expect_matches_finite_differences({0, false, true, Gelu::tanh, true, true}, 5);
}

TEST(VitBackward, PooledRowTargetIsALogitsGradient) {
  // a target given at the pooled row as w_head[c] is the logit's: one rule for both
  for (const bool probe : {false, true}) {
    std::mt19937 rng(6);
    const VitModel m = small_classifier({0, false, true, Gelu::erf, true, probe}, rng);
    const Matrix x = test::random_matrix(probe ? 9 : 10, 8, rng, 1.0f);
    EXPECT_TRUE(pooled_row_backward(m, x, m.w_head.row(2)).isApprox(logit_gradient(m, x, 2))) << probe;
    EXPECT_THROW(pooled_row_backward(m, x, RowVector::Zero(7)), Error);
  }
}

TEST(VitBackward, RefusesAModelWithoutClassifierOrAClassItLacks) {
  std::mt19937 rng(4);
  VitModel m = small_classifier({}, rng);
  const Matrix x = Matrix::Zero(10, 8);
  EXPECT_THROW(logit_gradient(m, x, 5), Error);
  EXPECT_THROW(logit_gradient(m, x, -1), Error);
  m.w_head = WeightMatrix();
  EXPECT_THROW(logit_gradient(m, x, 0), Error);
}

TEST(LegradText, RefusesAModelOrAnEmbeddingThatDoesNotFit) {
  std::mt19937 rng(7);
  VitModel m = small_classifier({0, false, true, Gelu::tanh, true, true}, rng);  // a probe, no projection
  ImageTensor image = random_image(6, 6, rng);
  ForwardTape tape;
  ForwardOptions options;
  options.tape = &tape;
  forward(m, image, options);
  const RowVector text = RowVector::Ones(8) / std::sqrt(8.0f);
  EXPECT_EQ(legrad_siglip_text(m, tape, text, {}, std::nullopt, 3, 3).size(), 9);
  EXPECT_THROW(legrad_siglip_text(m, tape, RowVector::Ones(6), {}, std::nullopt, 3, 3), Error);
  EXPECT_THROW(legrad_siglip_text(m, tape, text, {}, EmptyPromptCorrection{RowVector::Ones(4), 0.8f}, 3, 3), Error);
  EXPECT_THROW(legrad_siglip_text(m, tape, text, {.first_layer = 3, .scale = true}, std::nullopt, 3, 3), Error);
  EXPECT_THROW(legrad_clip_text(m, tape, text, {}, 3, 3), Error);  // no image projection
  m.w_embed = test::random_matrix(4, 8, rng, 0.5f);
  EXPECT_THROW(legrad_clip_text(m, tape, text, {}, 3, 3), Error);  // 8 values for a 4-wide embedding
  m.pooling = Pooling::class_token;
  m.probe_head = ProbeHead();
  EXPECT_THROW(legrad_siglip_text(m, tape, text, {}, std::nullopt, 3, 3), Error);  // no probe
}

}  // namespace
}  // namespace vitattn
