// core/token_diagnostics on hand-made inputs whose every number can be worked out by hand:
// token norms, the median patch norm (odd and even counts), the artifact rule (strictly above
// ratio × median, the class token and registers never flagged), sink scores (columns' mean),
// the class token's share, --clean's without_tokens, and TokenRecorder::finish (flags per
// layer, register share, each head's entropy over all T, mask share, flagged share).
#include "core/token_diagnostics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace vitattn {
namespace {

RowVector row(std::initializer_list<float> v) {
  RowVector r(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (float x : v) r(i++) = x;
  return r;
}

TEST(TokenNorms, EachRowsEuclideanNormSummedInDouble) {
  Matrix x(4, 2);  // (n_tokens, width)
  x << 3, 4,       // 5
      0, 0,        // 0
      -1, 1,       // √2
      1e20f, 1e20f;  // each square overflows a float; summed in double: √2·1e20
  const RowVector n = token_norms(x);
  ASSERT_EQ(n.size(), 4);
  EXPECT_FLOAT_EQ(n(0), 5.0f);
  EXPECT_EQ(n(1), 0.0f);
  EXPECT_FLOAT_EQ(n(2), std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(n(3), std::sqrt(2.0f) * 1e20f);
}

TEST(MedianPatchNorm, OddAndEvenCountsAndOnlyThePatches) {
  // Class token 100 and a register 50 are not patches: the median is over 3, 1, 2.
  EXPECT_EQ(median_patch_norm(row({100, 50, 3, 1, 2}), 2), 2.0f);
  // Four patches 4, 1, 3, 2: the mean of the middle two, (2 + 3) / 2.
  EXPECT_EQ(median_patch_norm(row({100, 4, 1, 3, 2}), 1), 2.5f);
  EXPECT_EQ(median_patch_norm(row({0, 7}), 1), 7.0f);  // one patch
  EXPECT_THROW(median_patch_norm(row({1, 2}), 2), Error);  // no patch tokens
}

TEST(ArtifactTokens, StrictlyAboveRatioTimesMedianAndNeverClassOrRegisters) {
  // Patches 1, 1, 1, 3, 3.5 (median 1, limit 3 at ratio 3): 3 is not above, 3.5 is.
  // The class token (50) and the register (40) are far above but never flagged.
  const RowVector n = row({50, 40, 1, 1, 3, 1, 3.5f});
  EXPECT_EQ(artifact_tokens(n, 2, 3.0f), (std::vector<int>{6}));
  EXPECT_EQ(artifact_tokens(n, 2, 2.0f), (std::vector<int>{4, 6}));  // increasing order
  EXPECT_EQ(artifact_tokens(n, 2, 4.0f), (std::vector<int>{}));
  EXPECT_THROW(artifact_tokens(n, 2, 0.0f), Error);
  EXPECT_THROW(artifact_tokens(n, 2, -1.0f), Error);
  EXPECT_THROW(artifact_tokens(n, 2, std::numeric_limits<float>::quiet_NaN()), Error);
  EXPECT_THROW(artifact_tokens(n, 2, std::numeric_limits<float>::infinity()), Error);
}

TEST(SinkScores, MeanOverHeadsAndQueryRowsOfEachColumn) {
  const Matrix a = Matrix::Identity(3, 3);  // (3, 3) columns sum to 1, 1, 1
  Matrix b(3, 3);                           // every row ½ ¼ ¼: columns sum to 1.5, 0.75, 0.75
  b << 0.5f, 0.25f, 0.25f, 0.5f, 0.25f, 0.25f, 0.5f, 0.25f, 0.25f;
  const RowVector s = sink_scores({a, b});
  ASSERT_EQ(s.size(), 3);
  EXPECT_FLOAT_EQ(s(0), 2.5f / 6.0f);  // (1 + 1.5) / (2 heads × 3 rows)
  EXPECT_FLOAT_EQ(s(1), 1.75f / 6.0f);
  EXPECT_FLOAT_EQ(s(2), 1.75f / 6.0f);
  EXPECT_NEAR(s.sum(), 1.0f, 1e-6f);
  EXPECT_THROW(sink_scores({}), Error);
}

TEST(ClassAttentionShare, RowZeroSummedOverTheTokensAveragedOverHeads) {
  Matrix a(3, 3), b(3, 3);  // (3, 3) each; only row 0 counts
  a << 0.2f, 0.3f, 0.5f, 1, 0, 0, 0, 0, 1;
  b << 0.6f, 0.1f, 0.3f, 0, 1, 0, 0, 1, 0;
  EXPECT_NEAR(class_attention_share({a, b}, {1, 2}), (0.8 + 0.4) / 2, 1e-7);
  EXPECT_NEAR(class_attention_share({a, b}, {2}), (0.5 + 0.3) / 2, 1e-7);
  EXPECT_EQ(class_attention_share({a, b}, {}), 0.0);
  EXPECT_EQ(class_attention_share({}, {1}), 0.0);
}

TEST(WithoutTokens, FlaggedCellsZeroedAndTheTotalKept) {
  Matrix map(2, 3);  // (grid_h, grid_w), total 21
  map << 1, 2, 3, 4, 5, 6;
  // Tokens 2 and 6 with one register (first patch 2): cells 0 and 4.
  const Matrix clean = without_tokens(map, {2, 6}, 2);
  EXPECT_EQ(clean(0, 0), 0.0f);
  EXPECT_EQ(clean(1, 1), 0.0f);
  const float k = 21.0f / 15.0f;  // the rest (2 + 3 + 4 + 6) scaled back to the total
  EXPECT_FLOAT_EQ(clean(0, 1), 2 * k);
  EXPECT_FLOAT_EQ(clean(0, 2), 3 * k);
  EXPECT_FLOAT_EQ(clean(1, 0), 4 * k);
  EXPECT_FLOAT_EQ(clean(1, 2), 6 * k);
  EXPECT_NEAR(clean.sum(), 21.0f, 1e-5f);
  EXPECT_EQ(without_tokens(map, {}, 2), map);  // nothing flagged: unchanged
  // Every cell flagged: all zero, no division by zero.
  const Matrix none = without_tokens(map, {2, 3, 4, 5, 6, 7}, 2);
  EXPECT_EQ(none, Matrix::Zero(2, 3));
  EXPECT_THROW(without_tokens(map, {1}, 2), Error);  // the register is not a cell
  EXPECT_THROW(without_tokens(map, {8}, 2), Error);  // past the grid
}

// ---- TokenRecorder: 2 layers, 2 heads, one register, a 2×2 grid of 16-px patches (T = 6).

constexpr int kTokens = 6;

TokenShape small_shape() {
  TokenShape s;
  s.layers = 2;
  s.heads = 2;
  s.first_patch = 2;
  s.grid_h = 2;
  s.grid_w = 2;
  s.patch_size = 16;
  return s;
}

// A head (T, T) with row 0 as given and every other row uniform (1/T).
Matrix head_with_class_row(std::initializer_list<float> r0) {
  Matrix a = Matrix::Constant(kTokens, kTokens, 1.0f / kTokens);
  a.row(0) = row(r0);
  return a;
}

// A stream (T, 2) whose token norms are `norms` (each row (0.6·n, 0.8·n)).
Matrix stream_with_norms(std::initializer_list<float> norms) {
  const RowVector n = row(norms);
  Matrix x(n.size(), 2);
  for (Eigen::Index i = 0; i < n.size(); ++i) x.row(i) << 0.6f * n(i), 0.8f * n(i);
  return x;
}

double entropy(std::initializer_list<double> p) {
  double h = 0;
  for (double v : p) h -= v * std::log(v);
  return h;
}

TEST(TokenRecorder, FinishGivesFlagsSharesAndHeadStatsPerLayer) {
  const std::vector<Matrix> layer0 = {head_with_class_row({0.1f, 0.2f, 0.1f, 0.1f, 0.1f, 0.4f}),
                                      head_with_class_row({0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f})};
  const float u = 1.0f / kTokens;
  const std::vector<Matrix> layer1 = {head_with_class_row({0.25f, 0.25f, 0.125f, 0.125f, 0.125f, 0.125f}),
                                      head_with_class_row({u, u, u, u, u, u})};
  TokenRecorder rec(small_shape(), 3.0f, 0.6f);
  // Heard in any order. Layer 0: patches 1, 1, 1, 10 (token 5 above 3 × median 1); class 100 and
  // register 50 are not patches. Layer 1: patches all 2, none flagged.
  rec.add_block_output(1, stream_with_norms({100, 50, 2, 2, 2, 2}));
  rec.add_attention(1, layer1);
  rec.add_attention(0, layer0);
  rec.add_block_output(0, stream_with_norms({100, 50, 1, 1, 1, 10}));
  const TokenDiagnostics d = rec.finish();

  ASSERT_EQ(d.norms.rows(), 2);
  ASSERT_EQ(d.norms.cols(), kTokens);
  EXPECT_FLOAT_EQ(d.norms(0, 5), 10.0f);
  EXPECT_FLOAT_EQ(d.norms(1, 0), 100.0f);
  EXPECT_FLOAT_EQ(d.median_norm(0), 1.0f);
  EXPECT_FLOAT_EQ(d.median_norm(1), 2.0f);
  ASSERT_EQ(d.flagged.size(), 2u);
  EXPECT_EQ(d.flagged[0], (std::vector<int>{5}));
  EXPECT_EQ(d.flagged[1], (std::vector<int>{}));

  // Sinks: each column's sum over both heads' 6 rows, over 12.
  for (int l = 0; l < 2; ++l) {
    const std::vector<Matrix>& heads = l == 0 ? layer0 : layer1;
    for (int j = 0; j < kTokens; ++j) {
      double column = 0;
      for (const Matrix& a : heads)
        for (int i = 0; i < kTokens; ++i) column += static_cast<double>(a(i, j));
      EXPECT_NEAR(d.sinks(l, j), column / 12.0, 1e-6) << "layer " << l << " token " << j;
    }
  }

  // The register (token 1): layer 0 (0.2 + 0.1) / 2, layer 1 (0.25 + 1/6) / 2.
  EXPECT_NEAR(d.register_share(0), 0.15, 1e-6);
  EXPECT_NEAR(d.register_share(1), (0.25 + 1.0 / 6.0) / 2.0, 1e-6);

  ASSERT_EQ(d.heads.size(), 2u);
  ASSERT_EQ(d.heads[0].size(), 2u);
  // Entropy of row 0 over all six tokens, class token and register included.
  EXPECT_NEAR(d.heads[0][0].entropy, entropy({0.1, 0.2, 0.1, 0.1, 0.1, 0.4}), 1e-6);
  EXPECT_NEAR(d.heads[0][1].entropy, entropy({0.5, 0.1, 0.1, 0.1, 0.1, 0.1}), 1e-6);
  EXPECT_NEAR(d.heads[1][0].entropy, entropy({0.25, 0.25, 0.125, 0.125, 0.125, 0.125}), 1e-6);
  EXPECT_NEAR(d.heads[1][1].entropy, std::log(6.0), 1e-6);
  // The patch queries attend uniformly to the 4 patches: distances 0, 16, 16, 16√2.
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t h = 0; h < 2; ++h) EXPECT_NEAR(d.heads[l][h].distance_px, 8.0 + 4.0 * std::sqrt(2.0), 1e-4);
  // DINO's mass mask at 0.6 of the class row's patch cells:
  //   0.1 0.1 0.1 0.4 (total 0.7): 0.4 holds 57 %, with one 0.1 71 % → 2 of 4 cells;
  //   uniform: 3 of 4 cells hold 75 % (2 hold only 50 %).
  EXPECT_DOUBLE_EQ(d.heads[0][0].mask_share, 0.5);
  EXPECT_DOUBLE_EQ(d.heads[0][1].mask_share, 0.75);
  EXPECT_DOUBLE_EQ(d.heads[1][1].mask_share, 0.75);
  // Flagged share: token 5 of row 0 at layer 0; nothing flagged at layer 1.
  EXPECT_NEAR(d.heads[0][0].flagged_share, 0.4, 1e-7);
  EXPECT_NEAR(d.heads[0][1].flagged_share, 0.1, 1e-7);
  EXPECT_EQ(d.heads[1][0].flagged_share, 0.0);
  EXPECT_EQ(d.heads[1][1].flagged_share, 0.0);
}

TEST(TokenRecorder, WithoutRegistersTheShareIsZero) {
  TokenShape s = small_shape();
  s.layers = 1;
  s.first_patch = 1;  // T = 5
  TokenRecorder rec(s, 3.0f, 0.6f);
  rec.add_attention(0, {Matrix::Constant(5, 5, 0.2f), Matrix::Constant(5, 5, 0.2f)});
  rec.add_block_output(0, Matrix::Ones(5, 3));
  const TokenDiagnostics d = rec.finish();
  EXPECT_EQ(d.register_share(0), 0.0f);
  EXPECT_TRUE(d.flagged[0].empty());
  EXPECT_NEAR(d.heads[0][0].entropy, std::log(5.0), 1e-6);
}

// Distilled DeiT: token 1 is the distillation token, not a register. With no register the
// share is 0 whatever the class row gives token 1; with one after it, the share is that one's.
TEST(TokenRecorder, TheDistillationTokenIsNotARegister) {
  const std::vector<Matrix> heads = {head_with_class_row({0.2f, 0.3f, 0.1f, 0.1f, 0.2f, 0.1f}),
                                     head_with_class_row({0.2f, 0.1f, 0.4f, 0.1f, 0.1f, 0.1f})};
  TokenShape s = small_shape();
  s.layers = 1;
  s.first_register = 2;  // [cls, dist, patches…]
  TokenRecorder distilled(s, 3.0f, 0.6f);
  distilled.add_attention(0, heads);
  distilled.add_block_output(0, Matrix::Ones(kTokens, 3));
  EXPECT_EQ(distilled.finish().shape.registers(), 0);
  EXPECT_EQ(distilled.finish().register_share(0), 0.0f);
  s.grid_w = 1;
  s.first_patch = 4;  // [cls, dist, register, register, 2 patches]
  TokenRecorder with_registers(s, 3.0f, 0.6f);
  with_registers.add_attention(0, heads);
  with_registers.add_block_output(0, Matrix::Ones(kTokens, 3));
  EXPECT_NEAR(with_registers.finish().register_share(0), (0.1 + 0.1 + 0.4 + 0.1) / 2.0, 1e-6);
}

TEST(TokenRecorder, FinishNamesTheFirstLayerNotHeard) {
  const std::vector<Matrix> heads = {head_with_class_row({0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f}),
                                     head_with_class_row({0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f})};
  const Matrix x = stream_with_norms({1, 1, 1, 1, 1, 1});
  TokenRecorder rec(small_shape(), 3.0f, 0.6f);
  rec.add_attention(0, heads);
  rec.add_block_output(0, x);
  rec.add_attention(1, heads);  // layer 1's output never heard
  try {
    rec.finish();
    ADD_FAILURE() << "finish() did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rec.add_attention(2, heads), Error);  // a model of 2 layers
  EXPECT_THROW(rec.add_block_output(-1, x), Error);
  EXPECT_THROW(rec.add_block_output(0, Matrix::Ones(5, 2)), Error);  // 5 tokens, not 6
  EXPECT_THROW(rec.add_attention(0, {heads[0]}), Error);             // 1 head, not 2
  EXPECT_THROW(rec.add_attention(0, {}), Error);                     // no head at all: said, not read
  EXPECT_THROW(rec.add_attention(0, {heads[0], Matrix::Constant(6, 5, 0.2f)}), Error);  // not (T, T)
}

TEST(TokenRecorder, RefusesARatioOrThresholdOutOfRange) {
  EXPECT_THROW(TokenRecorder(small_shape(), 0.0f, 0.6f), Error);
  EXPECT_THROW(TokenRecorder(small_shape(), std::numeric_limits<float>::quiet_NaN(), 0.6f), Error);
  EXPECT_THROW(TokenRecorder(small_shape(), 3.0f, 0.0f), Error);
  EXPECT_THROW(TokenRecorder(small_shape(), 3.0f, 1.5f), Error);
  EXPECT_NO_THROW(TokenRecorder(small_shape(), 3.0f, 1.0f));
}

}  // namespace
}  // namespace vitattn
