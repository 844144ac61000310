// Attention on hand-computable inputs, and against a naive triple loop in double precision.
#include "core/attention.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "test_util.hpp"

namespace vitattn {
namespace {

// The textbook formula written as loops, in double: an independent implementation.
struct NaiveAttention {
  std::vector<std::vector<double>> weights, output;
};

NaiveAttention naive_attention(const Matrix& q, const Matrix& k, const Matrix& v, const Matrix& mask, bool scale) {
  const auto n_q = static_cast<std::size_t>(q.rows()), n_k = static_cast<std::size_t>(k.rows());
  const auto d_k = static_cast<std::size_t>(q.cols()), d_v = static_cast<std::size_t>(v.cols());
  NaiveAttention r;
  r.weights.assign(n_q, std::vector<double>(n_k));
  r.output.assign(n_q, std::vector<double>(d_v, 0.0));
  for (std::size_t i = 0; i < n_q; ++i) {
    std::vector<double> s(n_k);
    double mx = -INFINITY;
    for (std::size_t j = 0; j < n_k; ++j) {
      double dot = 0;
      for (std::size_t t = 0; t < d_k; ++t)
        dot += static_cast<double>(q(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(t))) *
               static_cast<double>(k(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(t)));
      if (scale) dot /= std::sqrt(static_cast<double>(d_k));
      if (mask.size()) dot += static_cast<double>(mask(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)));
      s[j] = dot;
      mx = std::max(mx, dot);
    }
    double sum = 0;
    for (std::size_t j = 0; j < n_k; ++j) sum += (s[j] = std::exp(s[j] - mx));
    for (std::size_t j = 0; j < n_k; ++j) {
      r.weights[i][j] = s[j] / sum;
      for (std::size_t t = 0; t < d_v; ++t)
        r.output[i][t] += r.weights[i][j] * static_cast<double>(v(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(t)));
    }
  }
  return r;
}

TEST(Attention, ThreeTokenExampleByHand) {
  // q₁=[1,0]; scores 1,0,1 → scaled 0.707,0,0.707 → weights 0.40,0.20,0.40 → output [0.80,0.60]
  const Matrix q = matrix_from_rows({{1, 0}});
  const Matrix kv = matrix_from_rows({{1, 0}, {0, 1}, {1, 1}});
  const Attention a = scaled_dot_product_attention(q, kv, kv);
  const double e = std::exp(1.0 / std::sqrt(2.0));
  const double w_outer = e / (2 * e + 1), w_mid = 1 / (2 * e + 1);
  EXPECT_NEAR(a.weights(0, 0), w_outer, 1e-6);
  EXPECT_NEAR(a.weights(0, 1), w_mid, 1e-6);
  EXPECT_NEAR(a.weights(0, 2), w_outer, 1e-6);
  EXPECT_NEAR(a.weights(0, 0), 0.40, 0.005);
  EXPECT_NEAR(a.weights(0, 1), 0.20, 0.005);
  EXPECT_NEAR(a.output(0, 0), 0.80, 0.005);
  EXPECT_NEAR(a.output(0, 1), 0.60, 0.005);
  EXPECT_NEAR(a.output(0, 0), 2 * w_outer, 1e-6);
  EXPECT_NEAR(a.output(0, 1), w_mid + w_outer, 1e-6);
}

TEST(Attention, FourTokenSelfAttentionExample) {
  const Matrix q = matrix_from_rows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}});
  const Matrix v = matrix_from_rows({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}});
  const Attention a = scaled_dot_product_attention(q, q, v);
  // Row 0: scaled scores [1, 0, 0.5, 0.5] (Q·Qᵀ/2).
  const double z = std::exp(1.0) + 1 + 2 * std::exp(0.5);
  EXPECT_NEAR(a.weights(0, 0), std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(a.weights(0, 1), 1 / z, 1e-6);
  EXPECT_NEAR(a.weights(0, 2), std::exp(0.5) / z, 1e-6);
  for (Eigen::Index i = 0; i < 4; ++i) {
    EXPECT_NEAR(a.weights.row(i).sum(), 1.0f, 1e-6f);
    Eigen::Index brightest;
    a.weights.row(i).maxCoeff(&brightest);
    EXPECT_EQ(brightest, i) << "row " << i << ": each token attends most to itself";
  }
  const double out00 = (std::exp(1.0) * 1 + 1 * 5 + std::exp(0.5) * 9 + std::exp(0.5) * 13) / z;
  EXPECT_NEAR(a.output(0, 0), out00, 1e-5);
}

TEST(Attention, WhyScaleSoftmaxSaturates) {
  Matrix small = matrix_from_rows({{2, 1, 0}}), large = matrix_from_rows({{20, 10, 0}});
  softmax_rows(small);
  softmax_rows(large);
  EXPECT_NEAR(small(0, 0), 0.665, 0.001);
  EXPECT_NEAR(small(0, 1), 0.245, 0.001);
  EXPECT_NEAR(small(0, 2), 0.090, 0.001);
  EXPECT_NEAR(large(0, 0), 0.99995, 1e-5);
  EXPECT_NEAR(large(0, 1), 4.54e-5, 1e-7);
  EXPECT_NEAR(large(0, 2), 2.06e-9, 1e-10);
}

TEST(Attention, SoftmaxIsStableForHugeScores) {
  Matrix s = matrix_from_rows({{1000, 1001, 999}, {-1e30f, 0, -1e30f}});
  softmax_rows(s);
  ASSERT_TRUE(s.allFinite());
  const double z = std::exp(-1.0) + 1 + std::exp(-2.0);
  EXPECT_NEAR(s(0, 1), 1 / z, 1e-6);
  EXPECT_FLOAT_EQ(s(1, 1), 1.0f);
}

TEST(Attention, CausalMaskZeroesTheFutureExactly) {
  const Matrix q = matrix_from_rows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}});
  const Matrix v = matrix_from_rows({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}});
  const Matrix mask = causal_mask(4);
  const Attention a = scaled_dot_product_attention(q, q, v, mask);
  for (Eigen::Index i = 0; i < 4; ++i) {
    for (Eigen::Index j = i + 1; j < 4; ++j) EXPECT_EQ(a.weights(i, j), 0.0f) << i << "," << j;
    EXPECT_NEAR(a.weights.row(i).sum(), 1.0f, 1e-6f);
  }
  EXPECT_EQ(a.weights(0, 0), 1.0f);
  EXPECT_EQ(a.output.row(0), v.row(0));
  // The last row sees everything: the same as without a mask.
  const Attention unmasked = scaled_dot_product_attention(q, q, v);
  EXPECT_TRUE(a.weights.row(3).isApprox(unmasked.weights.row(3), 1e-6f));
}

TEST(Attention, FullyMaskedRowAttendsToNothing) {
  Matrix s = matrix_from_rows({{kMasked, kMasked}, {0, kMasked}});
  softmax_rows(s);
  EXPECT_EQ(s(0, 0), 0.0f);
  EXPECT_EQ(s(0, 1), 0.0f);
  EXPECT_EQ(s(1, 0), 1.0f);
  EXPECT_EQ(s(1, 1), 0.0f);
}

struct RandomCase {
  int n_q, n_k, d_k, d_v;
  bool masked, scale;
};

class AttentionVsNaive : public ::testing::TestWithParam<RandomCase> {};

TEST_P(AttentionVsNaive, AgreesWithTripleLoop) {
  const RandomCase c = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.n_q * 131 + c.d_k));
  const Matrix q = test::random_matrix(c.n_q, c.d_k, rng, 2.0f);
  const Matrix k = test::random_matrix(c.n_k, c.d_k, rng, 2.0f);
  const Matrix v = test::random_matrix(c.n_k, c.d_v, rng, 3.0f);
  Matrix mask;
  if (c.masked) {
    mask = test::random_matrix(c.n_q, c.n_k, rng, 1.0f);
    for (Eigen::Index i = 0; i < mask.size(); i += 3) mask.data()[i] = kMasked;
    for (Eigen::Index i = 0; i < c.n_q; ++i) mask(i, 1) = 0.0f;  // keep one key visible per row
  }
  const Attention a = scaled_dot_product_attention(q, k, v, mask, c.scale);
  const NaiveAttention ref = naive_attention(q, k, v, mask, c.scale);
  double worst_w = 0, worst_o = 0;
  for (int i = 0; i < c.n_q; ++i) {
    for (int j = 0; j < c.n_k; ++j)
      worst_w = std::max(worst_w, std::abs(static_cast<double>(a.weights(i, j)) - ref.weights[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]));
    for (int t = 0; t < c.d_v; ++t)
      worst_o = std::max(worst_o, std::abs(static_cast<double>(a.output(i, t)) - ref.output[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)]));
  }
  // float32 rounds each score to a relative 2^-24, so a weight may move by about that
  // times the largest score: the tolerance follows the scores' size.
  const double max_score = static_cast<double>((q * k.transpose()).cwiseAbs().maxCoeff()) /
                           (c.scale ? std::sqrt(static_cast<double>(c.d_k)) : 1.0);
  const double tol_w = 1e-6 + 8 * static_cast<double>(FLT_EPSILON) * max_score;
  const double tol_o = tol_w * static_cast<double>(v.cwiseAbs().maxCoeff()) * 4;
  EXPECT_LT(worst_w, tol_w) << "largest score " << max_score;
  EXPECT_LT(worst_o, tol_o);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionVsNaive,
                         ::testing::Values(RandomCase{1, 3, 2, 2, false, true}, RandomCase{5, 5, 4, 4, false, true},
                                           RandomCase{197, 197, 64, 64, false, true},
                                           RandomCase{197, 197, 64, 64, false, false},
                                           RandomCase{17, 33, 12, 7, true, true}, RandomCase{65, 65, 12, 12, true, false}),
                         [](const ::testing::TestParamInfo<RandomCase>& param_info) {
                           const RandomCase& c = param_info.param;
                           return "q" + std::to_string(c.n_q) + "_k" + std::to_string(c.n_k) + "_dk" +
                                  std::to_string(c.d_k) + "_dv" + std::to_string(c.d_v) + (c.masked ? "_masked" : "") +
                                  (c.scale ? "" : "_unscaled");
                         });

TEST(Attention, RejectsMismatchedShapes) {
  const Matrix q(3, 4), k(5, 3), v(5, 2);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v), Error);
  const Matrix k_ok(5, 4), mask(2, 5);
  EXPECT_THROW(scaled_dot_product_attention(q, k_ok, v, mask), Error);
}

}  // namespace
}  // namespace vitattn
