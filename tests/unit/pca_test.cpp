// core/pca.hpp on hand-made features whose principal components are known exactly.
// A 3×4 grid (its outer ring: rows 0 and 2, and columns 0 and 3 of row 1; the two interior
// patches are (1, 1) and (1, 2)), four feature columns of integers, so every sum is exact:
//   column 0: 2 × the column pattern (−3, −1, 1, 3) over each row     variance 20
//   column 1: 3 × the row pattern (−1, 0, 1) over each column          variance 6
//   column 2: 3 × (5 on the interior, −1 on the ring)                  variance 45
//   column 3: 7 everywhere (the mean only)                             variance 0
// The three patterns are zero-mean and orthogonal, so the covariance is diag(20, 6, 45, 0):
// component 1 is axis 2, whose ring mean projects below the mean (−3): the sign rule keeps +;
// components 2 and 3 (axes 0 and 1) have ring means exactly at the mean: the tie rule makes
// their largest entry positive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/pca.hpp"

namespace vitattn {
namespace {

constexpr int kH = 3, kW = 4;

Matrix known_features(int dim = 4) {
  Matrix x = Matrix::Zero(kH * kW, dim);  // (12, dim)
  const float cols[kW] = {-3, -1, 1, 3}, rows[kH] = {-1, 0, 1};
  for (int r = 0; r < kH; ++r)
    for (int c = 0; c < kW; ++c) {
      const int i = r * kW + c;
      const bool interior = r == 1 && (c == 1 || c == 2);
      x(i, 0) = 2 * cols[c];
      x(i, 1) = 3 * rows[r];
      x(i, 2) = 3 * (interior ? 5.0f : -1.0f);
      x(i, 3) = 7;
    }
  return x;
}

// How far `row` is from the unit vector along axis i, entry by entry. A plain loop: Eigen's
// maxCoeff on a dynamic vector (and a write into a Zero(dim)) makes GCC 12 at -O3 see the null
// data pointer of an empty vector (a false -Wnull-dereference, fatal under -Werror).
float distance_to_axis(const RowVector& row, int i) {
  float largest = 0;
  for (Eigen::Index j = 0; j < row.size(); ++j) largest = std::max(largest, std::abs(row(j) - (j == i ? 1.0f : 0.0f)));
  return largest;
}

void expect_known_fit(const PcaFit& fit, int dim) {
  ASSERT_EQ(fit.components.rows(), 3);
  ASSERT_EQ(fit.components.cols(), dim);
  EXPECT_NEAR(fit.variances(0), 45, 1e-4);
  EXPECT_NEAR(fit.variances(1), 20, 1e-4);
  EXPECT_NEAR(fit.variances(2), 6, 1e-4);
  EXPECT_LT(distance_to_axis(fit.components.row(0), 2), 1e-5) << fit.components;
  EXPECT_LT(distance_to_axis(fit.components.row(1), 0), 1e-5) << fit.components;
  EXPECT_LT(distance_to_axis(fit.components.row(2), 1), 1e-5) << fit.components;
  EXPECT_NEAR(fit.mean(3), 7, 1e-6);
}

TEST(Pca, CovarianceFitFindsTheKnownComponentsSignedByTheRule) {
  CovarianceSum sum(4);
  sum.add(known_features(), kH, kW);
  EXPECT_EQ(sum.count(), 12);
  EXPECT_EQ(sum.border_count(), 10);  // the ring of a 3×4 grid
  // Over the ring: column 0's pattern cancels (row 1 gives 2·(−3) + 2·3), column 1's too,
  // column 2 is −3 ten times, column 3 is 7 ten times. The interior (1, 2) counted instead of
  // (1, 3) would give column 0 −4 and column 2 −12.
  EXPECT_EQ(sum.border_sum(), Eigen::Vector4d(0, 0, -30, 70));
  expect_known_fit(fit_pca(sum), 4);
}

TEST(Pca, GramFitOfAnImageOfFewerPatchesThanWidthIsTheSame) {
  Matrix wide = Matrix::Zero(kH * kW, 16);  // (12, 16): n < dim takes the Gram matrix
  wide.leftCols(4) = known_features();
  expect_known_fit(fit_image_pca(wide, kH, kW), 16);
  expect_known_fit(fit_image_pca(known_features(), kH, kW), 4);  // n ≥ dim: the covariance
}

TEST(Pca, GramAndCovarianceAgreeOnRandomFeatures) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  Matrix x(2 * 5, 16);  // (10, 16)
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng) * static_cast<float>(1 + i % 16);
  CovarianceSum sum(16);
  sum.add(x, 2, 5);
  const PcaFit a = fit_pca(sum), b = fit_image_pca(x, 2, 5);
  EXPECT_LT((a.components - b.components).cwiseAbs().maxCoeff(), 1e-4);
  EXPECT_LT(((a.variances - b.variances).array() / a.variances.array()).abs().maxCoeff(), 1e-4);
}

TEST(Pca, SumsAddedInPartsAreTheWhole) {
  const Matrix x = known_features();
  CovarianceSum whole(4), first(4), second(4);
  whole.add(x, kH, kW);
  whole.add(x * 2, kH, kW);
  first.add(x, kH, kW);
  second.add(x * 2, kH, kW);
  first.add(second);
  EXPECT_EQ(first.count(), 24);
  EXPECT_EQ(first.outer(), whole.outer());
  EXPECT_EQ(first.border_sum(), whole.border_sum());
}

TEST(Pca, PictureMinMaxThreeSigmaAndMask) {
  const Matrix x = known_features();
  PcaFit fit = fit_image_pca(x, kH, kW);
  // Component 1 projects 15 on the interior and −3 on the ring: min-max 1 and 0 (red);
  // component 2 is the column pattern: 0, 1/3, 2/3, 1 (green) whatever the row.
  PcaPicture p = pca_picture(fit, x, kH, kW);
  ASSERT_EQ(p.rgb.size(), 36u);
  EXPECT_EQ(p.rgb[(1 * kW + 1) * 3 + 0], 255);
  EXPECT_EQ(p.rgb[(0 * kW + 1) * 3 + 0], 0);
  EXPECT_EQ(p.rgb[(2 * kW + 0) * 3 + 1], 0);
  EXPECT_EQ(p.rgb[(2 * kW + 1) * 3 + 1], 85);
  EXPECT_EQ(p.rgb[(2 * kW + 3) * 3 + 1], 255);
  EXPECT_EQ(p.rgb[(0 * kW + 2) * 3 + 2], 0);    // component 3: row pattern, row 0 lowest
  EXPECT_EQ(p.rgb[(1 * kW + 2) * 3 + 2], 128);  // lround(127.5)
  // --pca-mask 0.5: the ring (component 1 at 0) is black, the interior keeps its colours.
  p = pca_picture(fit, x, kH, kW, 0.5f);
  EXPECT_EQ(p.rgb[(0 * kW + 3) * 3 + 0] + p.rgb[(0 * kW + 3) * 3 + 1] + p.rgb[(0 * kW + 3) * 3 + 2], 0);
  EXPECT_EQ(p.rgb[(1 * kW + 2) * 3 + 0], 255);
  EXPECT_EQ(p.rgb[(1 * kW + 2) * 3 + 1], 170);
  // ±3σ: 15 over σ = √45 is (15 + 3σ) / 6σ = 0.8727 → 223; the ring's −3 → 0.4255 → 108.
  fit.scaling = PcaScaling::three_sigma;
  p = pca_picture(fit, x, kH, kW);
  EXPECT_EQ(p.rgb[(1 * kW + 1) * 3 + 0], 223);
  EXPECT_EQ(p.rgb[(0 * kW + 0) * 3 + 0], 108);
}

TEST(Pca, RefusesFeaturesThatDoNotFitTheGrid) {
  CovarianceSum sum(4);
  EXPECT_THROW(sum.add(known_features(), 4, 4), Error);
  EXPECT_THROW(fit_pca(sum), Error);  // nothing added
}

}  // namespace
}  // namespace vitattn
