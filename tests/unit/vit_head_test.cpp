// The pooled heads (vit_head.hpp) on hand-made tokens: each pooling's logits worked out by hand
// here, the embedding's projection and L2 normalisation, and the head's shapes refused by name.
#include "core/vit_head.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

constexpr int D = 2;

// A model of width D whose head is all that matters: d_model comes from the patch weight.
VitModel head_only(Pooling pooling) {
  VitModel m;
  m.w_patch = Matrix::Zero(D, 3 * 4);
  m.patch_size = 2;
  m.cls_token = RowVector::Zero(D);
  m.pooling = pooling;
  return m;
}

Matrix rows(std::initializer_list<std::initializer_list<float>> values) {
  Matrix m(static_cast<Eigen::Index>(values.size()), D);
  Eigen::Index i = 0;
  for (const auto& r : values) {
    Eigen::Index j = 0;
    for (float v : r) m(i, j++) = v;
    ++i;
  }
  return m;
}

// tokens: class (1, 2), distillation (3, −1), patches (2, 0), (4, 2), (0, 4): their mean (2, 2)
const Matrix kTokens = rows({{1, 2}, {3, -1}, {2, 0}, {4, 2}, {0, 4}});

TEST(VitHead, ClassTokenReadsRowZero) {
  VitModel m = head_only(Pooling::class_token);
  m.w_head = rows({{1, 0}, {1, 1}});  // logits: x0, x0 + x1
  m.b_head = RowVector::Constant(2, 0.5f);
  const RowVector logits = classifier_logits(m, kTokens.topRows(3));  // cls + two patches
  EXPECT_FLOAT_EQ(logits(0), 1.5f);
  EXPECT_FLOAT_EQ(logits(1), 3.5f);
}

TEST(VitHead, DistilledAveragesTheClassAndDistillationHeads) {
  VitModel m = head_only(Pooling::class_and_dist);
  m.dist_token = RowVector::Zero(D);
  m.w_head = rows({{1, 0}});       // class token: 1
  m.w_head_dist = rows({{0, 2}});  // distillation token: 2·(−1) = −2
  m.b_head_dist = RowVector::Constant(1, 1.0f);  // −1
  EXPECT_FLOAT_EQ(classifier_logits(m, kTokens)(0), 0.0f);  // (1 + (−1)) / 2
}

TEST(VitHead, PatchMeanSkipsTheLeadingTokensThenFcNorm) {
  VitModel m = head_only(Pooling::patch_mean);
  m.dist_token = RowVector::Zero(D);  // patches start at 2
  m.w_head = rows({{1, 0}, {0, 1}});
  EXPECT_FLOAT_EQ(classifier_logits(m, kTokens)(0), 2.0f);
  EXPECT_FLOAT_EQ(classifier_logits(m, kTokens)(1), 2.0f);
  // fc_norm over (2, 2): zero variance → (x − mean)/√ε · γ + β = β
  m.fc_norm = {RowVector::Constant(D, 3.0f), rows({{0.25f, -0.5f}})};
  const RowVector logits = classifier_logits(m, kTokens);
  EXPECT_FLOAT_EQ(logits(0), 0.25f);
  EXPECT_FLOAT_EQ(logits(1), -0.5f);
}

TEST(VitHead, ClassAndPatchMeanConcatenatesBoth) {
  VitModel m = head_only(Pooling::class_and_patch_mean);
  m.dist_token = RowVector::Zero(D);
  Matrix w(1, 2 * D);
  w << 1, 10, 100, 1000;
  m.w_head = w;  // [cls (1, 2), mean (2, 2)] → 1 + 20 + 200 + 2000
  EXPECT_FLOAT_EQ(classifier_logits(m, kTokens)(0), 2221.0f);
  EXPECT_EQ(pooled_features(m, kTokens).size(), 2 * D);
}

TEST(VitHead, TheEmbeddingIsProjectedThenUnitLength) {
  VitModel m = head_only(Pooling::class_token);
  Matrix w(3, D);
  w << 1, 0, 0, 1, 1, 1;
  m.w_embed = w;  // (1, 2) → (1, 2, 3), norm √14
  const RowVector e = image_embedding(m, kTokens);
  ASSERT_EQ(e.size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(e(i), (i + 1) / std::sqrt(14.0), 1e-7);
}

TEST(VitHead, ShapesThatDoNotFitThePoolingAreRefusedByName) {
  VitModel m = head_only(Pooling::class_and_patch_mean);
  m.w_head = Matrix::Zero(3, D);  // needs 2·D
  EXPECT_EQ(test::error_of([&] { validate_head(m, "f.safetensors", true); }),
            "f.safetensors: classifier weight is [3, 2], expected [3, 4]");
  m.pooling = Pooling::class_and_dist;
  EXPECT_EQ(test::error_of([&] { validate_head(m, "f.safetensors", true); }),
            "f.safetensors: a distilled classifier needs the distillation token and both heads");
  m = head_only(Pooling::class_token);
  m.w_embed = Matrix::Zero(4, D + 1);
  EXPECT_EQ(test::error_of([&] { validate_head(m, "f.safetensors", true); }),
            "f.safetensors: embedding projection is [4, 3], expected [4, 2]");
  m.w_embed = Matrix::Constant(4, D, std::nanf(""));
  EXPECT_EQ(test::error_of([&] { validate_head(m, "f.safetensors", true); }),
            "f.safetensors: embedding projection holds a non-finite value (NaN or inf)");
}

}  // namespace
}  // namespace vitattn
