// AttnLRP's rules (core/lrp.hpp) on examples worked by hand: zennit's Gamma rule on a 2×3 layer,
// its reduction to the plain gradient at γ = 0 without a bias, and the identity rules of GELU and
// LayerNorm. The whole map is checked against a torch implementation of the rules in
// tests/oracle/test_lrp.py.
#include "core/lrp.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace vitattn
