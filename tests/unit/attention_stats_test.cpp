// core/attention_stats on tiny hand-made attention matrices whose entropy and mean attention
// distance can be worked out by hand.
#include "core/attention_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"

namespace vitattn {
namespace {

// A 2×2 grid of patches 16 px wide, after one class token: T = 5, patches at tokens 1…4
// (row-major: 1 top-left, 2 top-right, 3 bottom-left, 4 bottom-right).
constexpr int kGrid = 2, kPatch = 16, kFirst = 1, kTokens = kFirst + kGrid * kGrid;

TEST(AttentionStats, UniformRowsHaveEntropyLogT) {
  const Matrix a = Matrix::Constant(kTokens, kTokens, 1.0f / kTokens);  // (T, T)
  EXPECT_NEAR(mean_row_entropy(a), std::log(5.0), 1e-6);
}

TEST(AttentionStats, OneHotRowsHaveEntropyZeroAndTheMeanIsOverRows) {
  Matrix a = Matrix::Identity(kTokens, kTokens);  // every row one-hot: 0 nats
  EXPECT_EQ(mean_row_entropy(a), 0.0);
  a.row(0).setConstant(1.0f / kTokens);  // one uniform row of five: ln 5 / 5 rows
  EXPECT_NEAR(mean_row_entropy(a), std::log(5.0) / 5.0, 1e-6);
  Matrix half = Matrix::Zero(1, 4);  // [½ ½ 0 0]: ln 2, the zeros count 0·ln 0 = 0
  half(0, 0) = half(0, 1) = 0.5f;
  EXPECT_NEAR(mean_row_entropy(half), std::log(2.0), 1e-6);
}

TEST(AttentionStats, PatchDistancesArePixelsBetweenCentres) {
  const Matrix d = patch_distances(kGrid, 3, kPatch);  // 2 rows × 3 columns
  ASSERT_EQ(d.rows(), 6);
  EXPECT_EQ(d(0, 0), 0.0f);
  EXPECT_EQ(d(0, 1), 16.0f);   // one column to the right
  EXPECT_EQ(d(0, 2), 32.0f);   // two columns
  EXPECT_EQ(d(0, 3), 16.0f);   // one row down (patch 3 = row 1, column 0)
  EXPECT_FLOAT_EQ(d(0, 5), std::hypot(16.0f, 32.0f));  // row 1, column 2
  EXPECT_EQ(d(5, 0), d(0, 5));
}

TEST(AttentionStats, DiagonalAttentionHasDistanceZero) {
  const Matrix a = Matrix::Identity(kTokens, kTokens);  // every patch attends to itself
  EXPECT_EQ(mean_attention_distance(a, kFirst, patch_distances(kGrid, kGrid, kPatch)), 0.0);
}

TEST(AttentionStats, OneHotAtAKnownOffsetIsThatOffsetTimesThePatchSize) {
  // Each patch attends only to the patch beside it in the same row (left ↔ right): one patch, 16 px.
  Matrix a = Matrix::Zero(kTokens, kTokens);
  a(0, 0) = 1;
  a(1, 2) = a(2, 1) = a(3, 4) = a(4, 3) = 1;
  const Matrix d = patch_distances(kGrid, kGrid, kPatch);
  EXPECT_NEAR(mean_attention_distance(a, kFirst, d), 16.0, 1e-6);
  // The opposite corner: √2 patches, 16·√2 px.
  a.setZero();
  a(1, 4) = a(4, 1) = a(2, 3) = a(3, 2) = 1;
  EXPECT_NEAR(mean_attention_distance(a, kFirst, d), 16.0 * std::sqrt(2.0), 1e-5);
}

TEST(AttentionStats, DistanceLeavesOutTheClassTokenAndRenormalises) {
  // Half of every patch's weight on the class token, half on its right/left neighbour: the
  // class token has no place in the image, so the distance is still one patch, not half of one.
  Matrix a = Matrix::Zero(kTokens, kTokens);
  for (int i = 1; i < kTokens; ++i) a(i, 0) = 0.5f;
  a(1, 2) = a(2, 1) = a(3, 4) = a(4, 3) = 0.5f;
  EXPECT_NEAR(mean_attention_distance(a, kFirst, patch_distances(kGrid, kGrid, kPatch)), 16.0, 1e-6);
  // With a register (first patch token 2), the patches shift by one.
  Matrix r = Matrix::Zero(kTokens + 1, kTokens + 1);
  r(2, 2) = r(3, 3) = r(4, 4) = 0.25f;  // patches 0…2: a quarter on themselves,
  r(2, 1) = r(3, 1) = r(4, 1) = 0.75f;  // three quarters on the register (token 1): 0 px;
  r(5, 2) = 1.0f;                       // patch 3 (bottom right) all on patch 0: √2 patches
  EXPECT_NEAR(mean_attention_distance(r, 2, patch_distances(kGrid, kGrid, kPatch)), 16.0 * std::sqrt(2.0) / 4.0, 1e-5);
}

TEST(AttentionStats, DistanceOnANonSquareGridCountsRowsOfGridWPatches) {
  // 2 rows × 3 columns (patches 0 1 2 / 3 4 5), one class token: each patch attends only to the
  // patch below or above it (i ↔ i + 3), one row = 16 px. With rows of grid_h = 2 patches
  // instead, i + 3 would be a row and a column away (16·√2 px), or two rows (32 px).
  constexpr int kRows = 2, kCols = 3, kT = 1 + kRows * kCols;
  Matrix a = Matrix::Zero(kT, kT);  // (T, T)
  a(0, 0) = 1;
  for (int i = 0; i < kCols; ++i) a(1 + i, 1 + i + kCols) = a(1 + i + kCols, 1 + i) = 1;
  EXPECT_NEAR(mean_attention_distance(a, kFirst, patch_distances(kRows, kCols, kPatch)), 16.0, 1e-6);
  // 3 rows × 2 columns, each patch attends to its right or left neighbour (2j ↔ 2j + 1): 16 px.
  a.setZero();
  a(0, 0) = 1;
  for (int j = 0; j < 3; ++j) a(1 + 2 * j, 2 + 2 * j) = a(2 + 2 * j, 1 + 2 * j) = 1;
  EXPECT_NEAR(mean_attention_distance(a, kFirst, patch_distances(3, 2, kPatch)), 16.0, 1e-6);
  // And the far corner of 2 × 3 (patch 0 ↔ 5): two columns and a row, √5 patches.
  a.setZero();
  a(0, 0) = 1;
  a(1, 6) = a(6, 1) = a(2, 5) = a(5, 2) = a(3, 4) = a(4, 3) = 1;  // 0↔5: √5, 1↔4: 1, 2↔3: √5 (row 0 col 2 ↔ row 1 col 0)
  EXPECT_NEAR(mean_attention_distance(a, kFirst, patch_distances(kRows, kCols, kPatch)),
              16.0 * (4 * std::sqrt(5.0) + 2) / 6, 1e-5);
}

TEST(AttentionStats, DistanceRefusesAMatrixOfTheWrongSize) {
  EXPECT_THROW(mean_attention_distance(Matrix::Identity(4, 4), kFirst, patch_distances(kGrid, kGrid, kPatch)), Error);
}

TEST(AttentionStats, MapEntropyNormalisesTheMap) {
  EXPECT_NEAR(map_entropy(Matrix::Constant(2, 2, 7.0f)), std::log(4.0), 1e-6);  // any constant map: ln 4
  Matrix m = Matrix::Zero(2, 2);
  EXPECT_EQ(map_entropy(m), 0.0);
  m(1, 0) = 3.0f;
  EXPECT_EQ(map_entropy(m), 0.0);
}

}  // namespace
}  // namespace vitattn
