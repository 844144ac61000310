// `vitattn eval`'s yardsticks in the core on inputs small enough to work out by hand: torch's
// bilinear upsampling, the thresholding at the mean and the counts (a constant map, an empty
// and a full mask), sklearn's average precision with ties, the pointing game's tolerance, the
// perturbation's ranking, ⌊k·N/10⌋ and AUC, Spearman's correlation with ties, and the
// randomised blocks (the statistics they are drawn at, the top blocks only).
// tests/oracle/test_eval.py recomputes the whole thing in numpy/sklearn/torch from the CLI.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/model_randomisation.hpp"
#include "core/perturbation.hpp"
#include "core/rank_correlation.hpp"
#include "core/segmentation_metrics.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

Grid grid_rows(std::initializer_list<std::initializer_list<double>> rows) {
  Grid g(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows.begin()->size()));
  Eigen::Index y = 0;
  for (const auto& r : rows) {
    Eigen::Index x = 0;
    for (double v : r) g(y, x++) = v;
    ++y;
  }
  return g;
}

TEST(EvalMetrics, UpsampleIsTorchBilinearWithoutAlignedCorners) {
  // 1×2 → 1×4: sources (i + ½)/2 − ½ = −¼ (clamped 0), ¼, ¾, 1¼ (upper neighbour clamped)
  const Grid up = upsample_bilinear(matrix_from_rows({{0.0f, 4.0f}}), 1, 4);
  EXPECT_DOUBLE_EQ(up(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(up(0, 1), 1.0);
  EXPECT_DOUBLE_EQ(up(0, 2), 3.0);
  EXPECT_DOUBLE_EQ(up(0, 3), 4.0);
}

TEST(EvalMetrics, ThresholdAtTheMeanAndCounts) {
  const Grid v = grid_rows({{0.0, 1.0}, {0.2, 0.9}});  // mean 0.525: object at 1 and 3
  const Grid mask = grid_rows({{0, 1}, {1, 0}});
  const SegmentationCounts c = segmentation_counts(v, mask);
  EXPECT_EQ(c.correct, 2);  // pixels 0 (background) and 1 (object)
  EXPECT_EQ(c.labeled, 4);
  EXPECT_EQ(c.intersection[0], 1);
  EXPECT_EQ(c.intersection[1], 1);
  EXPECT_EQ(c.union_[0], 3);  // predicted {0, 2}, labelled {0, 3}
  EXPECT_EQ(c.union_[1], 3);
  EXPECT_NEAR(pixel_accuracy(c), 0.5, 1e-12);
  EXPECT_NEAR(mean_iou(c), 1.0 / 3.0, 1e-12);
}

TEST(EvalMetrics, ConstantMapIsBackgroundEverywhereAndScoresZero) {
  const Grid v = min_max_normalised(Grid::Constant(2, 2, 0.3));
  EXPECT_TRUE(std::isnan(v(0, 0)));
  const Grid mask = grid_rows({{1, 0}, {0, 0}});
  const SegmentationCounts c = segmentation_counts(v, mask);
  EXPECT_EQ(c.correct, 3);
  EXPECT_EQ(c.intersection[1], 0);
  // every score 0 (their nan_to_num): one threshold, precision 4/8 at recall 1
  EXPECT_NEAR(segmentation_ap(v, mask), 0.5, 1e-12);
}

TEST(EvalMetrics, EmptyAndFullMasks) {
  const Grid v = grid_rows({{0.0, 1.0}, {0.5, 0.25}});  // mean 0.4375: object at 1, 2
  const SegmentationCounts empty = segmentation_counts(v, Grid::Zero(2, 2));
  EXPECT_EQ(empty.correct, 2);
  EXPECT_EQ(empty.union_[1], 2);  // nothing labelled object: its IoU is 0/2
  EXPECT_NEAR(mean_iou(empty), (2.0 / 4.0 + 0.0) / 2.0, 1e-12);
  const SegmentationCounts full = segmentation_counts(v, Grid::Ones(2, 2));
  EXPECT_EQ(full.correct, 2);
  EXPECT_EQ(full.union_[0], 2);
  EXPECT_FALSE(pointing_hit(v, Grid::Zero(2, 2)));
  EXPECT_TRUE(pointing_hit(v, Grid::Ones(2, 2)));
}

TEST(EvalMetrics, AveragePrecisionGroupsTies) {
  // sklearn: average_precision_score([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1]) = 0.5·1 + 0.5·(2/3)
  EXPECT_NEAR(average_precision({0.9, 0.8, 0.8, 0.1}, {1, 0, 1, 0}), 0.5 + 1.0 / 3.0, 1e-12);
  // [1, 0, 1] with [0.1, 0.4, 0.35]: thresholds 0.4 (P 0), 0.35 (R ½, P ½), 0.1 (R 1, P ⅔)
  EXPECT_NEAR(average_precision({0.1, 0.4, 0.35}, {1, 0, 1}), 0.25 + 1.0 / 3.0, 1e-12);
  EXPECT_EQ(average_precision({0.1, 0.2}, {0, 0}), 0.0);
}

TEST(EvalMetrics, PointingGameTolerance) {
  Grid map = Grid::Zero(40, 40);
  map(20, 20) = 1.0;
  Grid mask = Grid::Zero(40, 40);
  mask(20, 35) = 1.0;  // 15 px away: a hit
  EXPECT_TRUE(pointing_hit(map, mask));
  mask(20, 35) = 0.0;
  mask(31, 31) = 1.0;  // √242 ≈ 15.6 px: a miss
  EXPECT_FALSE(pointing_hit(map, mask));
}

TEST(EvalMetrics, PixelRankingTiesByIndexBothWays) {
  const Grid m = grid_rows({{0.2, 0.9, 0.2}, {0.5, 0.9, 0.1}});
  EXPECT_EQ(pixel_ranking(m, Perturbation::positive), (std::vector<int>{1, 4, 3, 0, 2, 5}));
  EXPECT_EQ(pixel_ranking(m, Perturbation::negative), (std::vector<int>{5, 0, 2, 3, 1, 4}));
}

TEST(EvalMetrics, PixelsAtStepIsFloorOfTenths) {
  EXPECT_EQ(pixels_at_step(3, 50176), 15052);  // int(224·224·0.3)
  EXPECT_EQ(pixels_at_step(1, 9), 0);
  EXPECT_EQ(pixels_at_step(9, 9), 8);
}

TEST(EvalMetrics, AucIsTrapezoidTimesHundred) {
  EXPECT_NEAR(perturbation_auc(std::vector<double>(10, 1.0)), 90.0, 1e-9);
  EXPECT_NEAR(perturbation_auc({1, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 15.0, 1e-9);  // 0.1·1 + 0.1·½
  EXPECT_THROW(perturbation_auc({1, 0}), Error);
}

TEST(EvalMetrics, RemovedPixelsAreTheNormalisedZero) {
  ImageTensor x{1, 2, std::vector<float>(6, 1.0f)};
  Normalization norm;
  const ImageTensor y = with_pixels_removed(x, norm, {1, 0}, 1);
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(y.at(c, 0, 1), -norm.mean[static_cast<std::size_t>(c)] / norm.std[static_cast<std::size_t>(c)]);
    EXPECT_FLOAT_EQ(y.at(c, 0, 0), 1.0f);
  }
}

TEST(EvalMetrics, SpearmanAverageRanks) {
  EXPECT_NEAR(spearman(matrix_from_rows({{1, 2, 3, 4}}), matrix_from_rows({{10, 20, 30, 40}})), 1.0, 1e-12);
  EXPECT_NEAR(spearman(matrix_from_rows({{1, 2, 3, 4}}), matrix_from_rows({{4, 3, 2, 1}})), -1.0, 1e-12);
  // scipy.stats.spearmanr([1, 2, 2, 3], [1, 3, 2, 4]): ranks (1, 2.5, 2.5, 4) and (1, 3, 2, 4) → 0.948683…
  EXPECT_NEAR(spearman(matrix_from_rows({{1, 2, 2, 3}}), matrix_from_rows({{1, 3, 2, 4}})), 0.9486832980505138, 1e-12);
  EXPECT_EQ(spearman(matrix_from_rows({{1, 1, 1}}), matrix_from_rows({{1, 2, 3}})), 0.0);
}

TEST(EvalMetrics, RandomisedBlockKeepsEachTensorsStatistics) {
  EncoderBlock b;
  Matrix w(64, 48);
  for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = 0.5f + 0.01f * static_cast<float>(i % 97);
  b.w_qkv = w;
  b.b_qkv = RowVector::Constant(64, 2.0f);
  const EncoderBlock r = randomised_block(b, 3);
  const Matrix got = r.w_qkv;
  const double mean = w.cast<double>().mean(), sd = std::sqrt((w.cast<double>().array() - mean).square().mean());
  const double gmean = got.cast<double>().mean(), gsd = std::sqrt((got.cast<double>().array() - gmean).square().mean());
  EXPECT_NEAR(gmean, mean, 0.05 * sd);
  EXPECT_NEAR(gsd, sd, 0.05 * sd);
  EXPECT_NE(got(0, 0), w(0, 0));
  EXPECT_TRUE((r.b_qkv.array() == 2.0f).all());  // std 0: the mean itself
  const EncoderBlock again = randomised_block(b, 3);
  EXPECT_TRUE(again.w_qkv.isApprox(r.w_qkv, 0.0f));  // the same draws every time
  EXPECT_FALSE(randomised_block(b, 4).w_qkv.isApprox(r.w_qkv));  // another layer, other draws
}

TEST(EvalMetrics, WithTopBlocksReplacesOnlyTheTop) {
  VitModel m;
  for (int l = 0; l < 3; ++l) {
    EncoderBlock b;
    b.b_qkv = RowVector::Constant(3, static_cast<float>(l));
    m.blocks.push_back(b);
  }
  std::vector<EncoderBlock> noisy = m.blocks;
  for (auto& b : noisy) b.b_qkv = RowVector::Constant(3, -1.0f);
  const VitModel two = with_top_blocks(m, noisy, 2);
  EXPECT_EQ(two.blocks[0].b_qkv(0), 0.0f);
  EXPECT_EQ(two.blocks[1].b_qkv(0), -1.0f);
  EXPECT_EQ(two.blocks[2].b_qkv(0), -1.0f);
  EXPECT_THROW(with_top_blocks(m, noisy, 4), Error);
}

}  // namespace
}  // namespace vitattn
