// Patch order, token embedding and the single-head forward pass on hand-made inputs.
#include "core/model.hpp"

#include <gtest/gtest.h>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "core/seeded_model.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

// Every pixel's value encodes where it is: 1000·c + 100·y + x (exact in float).
ImageTensor position_coded_image(int height, int width) {
  ImageTensor t;
  t.height = height;
  t.width = width;
  t.chw.resize(static_cast<std::size_t>(3 * height * width));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        t.chw[static_cast<std::size_t>((c * height + y) * width + x)] = static_cast<float>(1000 * c + 100 * y + x);
  return t;
}

TEST(Patchify, RasterOrderAndChannelYXFlattening) {
  const ImageTensor img = position_coded_image(6, 6);
  const Matrix p = patchify(img, 3);  // 2×2 grid of 3×3 patches
  ASSERT_EQ(p.rows(), 4);
  ASSERT_EQ(p.cols(), 27);
  // Patch 1 is the top-right one (row 0, column 1): its first pixel is (y=0, x=3).
  EXPECT_EQ(p(1, 0), 3.0f);
  // Patch 2 is the bottom-left one: first pixel (y=3, x=0).
  EXPECT_EQ(p(2, 0), 300.0f);
  // Within a patch: (c, y, x) order — index 1 is x+1, index 3 is y+1, index 9 is the next channel.
  EXPECT_EQ(p(3, 1), 100 * 3 + 4.0f);
  EXPECT_EQ(p(3, 3), 100 * 4 + 3.0f);
  EXPECT_EQ(p(3, 9), 1000 + 100 * 3 + 3.0f);
  EXPECT_EQ(p(3, 26), 2000 + 100 * 5 + 5.0f);
}

TEST(Patchify, RejectsPartialPatches) {
  EXPECT_THROW(patchify(position_coded_image(7, 6), 3), Error);
}

TEST(NormalizeRgb, ImageNetFormulaPerChannel) {
  const std::uint8_t rgb[6] = {0, 128, 255, 10, 20, 30};
  const ImageTensor t = normalize_rgb(rgb, 1, 2, Normalization{});
  EXPECT_FLOAT_EQ(t.at(0, 0, 0), (0.0f / 255 - 0.485f) / 0.229f);
  EXPECT_FLOAT_EQ(t.at(1, 0, 0), (128.0f / 255 - 0.456f) / 0.224f);
  EXPECT_FLOAT_EQ(t.at(2, 0, 1), (30.0f / 255 - 0.406f) / 0.225f);
}

SingleHeadModel tiny_model() {
  // S=4, P=2: a 2×2 grid, D=3, d_k=2. Small enough to write out by hand.
  SingleHeadModel m;
  m.patch_size = 2;
  m.w_patch = Matrix::Zero(3, 12);
  m.w_patch(0, 0) = 1;   // token feature 0 = red value of each patch's top-left pixel
  m.w_patch(1, 4) = 1;   // feature 1 = green top-left
  m.w_patch(2, 11) = 1;  // feature 2 = blue bottom-right
  m.b_patch = RowVector::Constant(3, 0.5f);
  m.cls_token = RowVector::Ones(3);
  m.pos_embed = Matrix::Zero(5, 3);
  m.pos_embed(2, 0) = 10;
  m.w_q = Matrix::Identity(2, 3);
  m.w_k = Matrix::Identity(2, 3);
  m.w_v = Matrix::Identity(2, 3);
  m.b_q = RowVector::Zero(2);
  m.b_k = RowVector::Constant(2, 1.0f);
  m.b_v = RowVector::Zero(2);
  return m;
}

TEST(EmbedTokens, ClassTokenFirstThenPatchesPlusPositions) {
  const SingleHeadModel m = tiny_model();
  m.validate("tiny");
  const ImageTensor img = position_coded_image(4, 4);
  const Matrix x = embed_tokens(m, patchify(img, 2));
  ASSERT_EQ(x.rows(), 5);
  ASSERT_EQ(x.cols(), 3);
  EXPECT_EQ(x.row(0), RowVector::Ones(3));  // cls_token + pos_embed[0] (= 0)
  // Patch 1 (top-right, origin y=0 x=2): red(0,2)=2, green(0,2)=1002, blue(1,3)=2103; +0.5 bias; +10 pos on feature 0.
  EXPECT_FLOAT_EQ(x(2, 0), 2 + 0.5f + 10);
  EXPECT_FLOAT_EQ(x(2, 1), 1002 + 0.5f);
  EXPECT_FLOAT_EQ(x(2, 2), 2103 + 0.5f);
}

TEST(RunSingleHead, ComposesTheStepsAndLaysTheClassRowOnTheGrid) {
  SingleHeadModel m = tiny_model();
  m.w_patch *= 0.001f;  // keep the scores in softmax's lively range
  const ImageTensor img = position_coded_image(4, 4);
  const AttentionMaps maps = run_single_head(m, img);
  const Matrix x = embed_tokens(m, patchify(img, 2));
  const Matrix q = linear(x, m.w_q, m.b_q), k = linear(x, m.w_k, m.b_k), v = linear(x, m.w_v, m.b_v);
  const Attention a = scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(maps.weights.isApprox(a.weights));
  EXPECT_TRUE(maps.output.isApprox(a.output));
  ASSERT_EQ(maps.cls_map.rows(), 2);
  EXPECT_EQ(maps.cls_map(0, 1), maps.weights(0, 2));
  EXPECT_EQ(maps.cls_map(1, 0), maps.weights(0, 3));
  // linear() is x·Wᵀ + b.
  EXPECT_FLOAT_EQ(k(0, 1), x(0, 1) + 1.0f);
}

TEST(RunSingleHead, RefusesAnImageOfTheWrongSize) {
  EXPECT_THROW(run_single_head(tiny_model(), position_coded_image(6, 6)), Error);
}

TEST(Validate, NamesTheTensorThatDoesNotFit) {
  SingleHeadModel m = tiny_model();
  m.w_k = Matrix::Zero(2, 4);
  try {
    m.validate("m.safetensors");
    FAIL() << "validate accepted a misshaped attn.k.weight";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "m.safetensors: attn.k.weight is [2, 4], expected [2, 3]");
  }
  m = tiny_model();
  m.cls_token(1) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(m.validate("m"), Error);
  m = tiny_model();
  m.pos_embed = Matrix::Zero(4, 3);  // 3 patches: not a square grid
  EXPECT_THROW(m.validate("m"), Error);
}

TEST(NormalizeForDisplay, MinMaxAndFlatMaps) {
  Matrix m(1, 3);
  m << 0.2f, 0.4f, 0.3f;
  const Matrix n = normalize_for_display(m);
  EXPECT_FLOAT_EQ(n(0, 0), 0.0f);
  EXPECT_FLOAT_EQ(n(0, 1), 1.0f);
  EXPECT_NEAR(n(0, 2), 0.5f, 1e-6f);
  EXPECT_EQ(normalize_for_display(Matrix::Constant(2, 2, 0.25f)), Matrix::Zero(2, 2));
}

}  // namespace
}  // namespace vitattn
