// Patch order, token embedding and the single-head (one attention-only block) forward pass on
// hand-made inputs.
#include "core/attention_maps.hpp"
#include "core/patchify.hpp"
#include "core/vit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

// The seeded head's kind of model: one attention-only block, one head of width d_k.
VitModel tiny_model() {
  // S=4, P=2: a 2×2 grid, D=3, d_k=2 (not D/H = 3). Small enough to write out by hand.
  VitModel m;
  m.patch_size = 2;
  m.n_heads = 1;
  m.grid_h = m.grid_w = 2;
  Matrix w_patch = Matrix::Zero(3, 12);
  w_patch(0, 0) = 1;   // token feature 0 = red value of each patch's top-left pixel
  w_patch(1, 4) = 1;   // feature 1 = green top-left
  w_patch(2, 11) = 1;  // feature 2 = blue bottom-right
  m.w_patch = w_patch;
  m.b_patch = RowVector::Constant(3, 0.5f);
  m.cls_token = RowVector::Ones(3);
  Matrix pos_embed = Matrix::Zero(5, 3);
  pos_embed(0, 1) = 3;  // the class token has a position too: a dropped pos_embed[0] shows
  pos_embed(2, 0) = 10;
  m.pos_embed = pos_embed;
  EncoderBlock b;
  Matrix w_qkv(6, 3);
  w_qkv << Matrix::Identity(2, 3), Matrix::Identity(2, 3), Matrix::Identity(2, 3);  // [W_Q; W_K; W_V]
  b.w_qkv = w_qkv;
  b.b_qkv = RowVector::Zero(6);
  b.b_qkv.segment(2, 2).setConstant(1.0f);  // b_k = (1, 1)
  m.blocks.push_back(b);
  return m;
}

TEST(EmbedImage, ClassTokenFirstThenPatchesPlusPositions) {
  const VitModel m = tiny_model();
  m.validate("tiny");
  const Matrix x = embed_image(m, position_coded_image(4, 4));
  ASSERT_EQ(x.rows(), 5);
  ASSERT_EQ(x.cols(), 3);
  EXPECT_EQ(x.row(0), matrix_from_rows({{1, 4, 1}}));  // cls_token (1, 1, 1) + pos_embed[0] (0, 3, 0)
  // Patch 1 (top-right, origin y=0 x=2): red(0,2)=2, green(0,2)=1002, blue(1,3)=2103; +0.5 bias; +10 pos on feature 0.
  EXPECT_FLOAT_EQ(x(2, 0), 2 + 0.5f + 10);
  EXPECT_FLOAT_EQ(x(2, 1), 1002 + 0.5f);
  EXPECT_FLOAT_EQ(x(2, 2), 2103 + 0.5f);
}

// The single-head forward pass written out as loops in double, from the model's weights
// alone: tokens = [cls + pos₀; patch·W_Eᵀ + b_E + posᵢ], q/k/v = tokens·Wᵀ + b,
// weights = softmax(q·kᵀ/√d_k) (row maximum subtracted), output = weights·v.
struct NaiveSingleHead {
  std::vector<std::vector<double>> weights, output;
};

NaiveSingleHead naive_single_head(const VitModel& m, const ImageTensor& img) {
  const EncoderBlock& b = m.blocks.at(0);
  const int p = m.patch_size, g = img.width / p, d = static_cast<int>(m.w_patch.rows()),
            dk = static_cast<int>(b.w_qkv.rows() / 3);
  const std::size_t n = 1 + static_cast<std::size_t>(g * g);
  std::vector<std::vector<double>> x(n, std::vector<double>(static_cast<std::size_t>(d)));
  for (int o = 0; o < d; ++o) x[0][static_cast<std::size_t>(o)] = double{m.cls_token(o)} + double{m.pos_embed(0, o)};
  for (int py = 0; py < g; ++py)
    for (int px = 0; px < g; ++px)
      for (int o = 0; o < d; ++o) {
        const int t = 1 + py * g + px;
        double s = double{m.b_patch(o)} + double{m.pos_embed(t, o)};
        for (int c = 0; c < 3; ++c)
          for (int y = 0; y < p; ++y)
            for (int xx = 0; xx < p; ++xx) s += double{m.w_patch(o, (c * p + y) * p + xx)} * double{img.at(c, py * p + y, px * p + xx)};
        x[static_cast<std::size_t>(t)][static_cast<std::size_t>(o)] = s;
      }
  // which = 0, 1, 2: rows which·d_k … of w_qkv and b_qkv are W_Q, W_K, W_V
  auto project = [&](int which) {
    std::vector<std::vector<double>> y(n, std::vector<double>(static_cast<std::size_t>(dk)));
    for (std::size_t i = 0; i < n; ++i)
      for (int o = 0; o < dk; ++o) {
        double s = double{b.b_qkv(which * dk + o)};
        for (int k = 0; k < d; ++k) s += x[i][static_cast<std::size_t>(k)] * double{b.w_qkv(which * dk + o, k)};
        y[i][static_cast<std::size_t>(o)] = s;
      }
    return y;
  };
  const auto q = project(0), k = project(1), v = project(2);
  NaiveSingleHead r;
  r.weights.assign(n, std::vector<double>(n));
  r.output.assign(n, std::vector<double>(static_cast<std::size_t>(dk), 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    double mx = -1e300, sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t t = 0; t < static_cast<std::size_t>(dk); ++t) s += q[i][t] * k[j][t];
      r.weights[i][j] = s / std::sqrt(static_cast<double>(dk));
      mx = std::max(mx, r.weights[i][j]);
    }
    for (double& w : r.weights[i]) sum += (w = std::exp(w - mx));
    for (std::size_t j = 0; j < n; ++j) {
      r.weights[i][j] /= sum;
      for (std::size_t t = 0; t < static_cast<std::size_t>(dk); ++t) r.output[i][t] += r.weights[i][j] * v[j][t];
    }
  }
  return r;
}

// The whole forward: the attention of the one layer, and the tokens it leaves, which for an
// attention-only block without projection are the head's output A·V (n_tokens, d_k).
void expect_single_head_matches_naive(const VitModel& m, const ImageTensor& img) {
  ForwardOptions fo;
  fo.keep_from_layer = 0;
  const ForwardResult r = forward(m, img, fo);
  ASSERT_EQ(r.attention.size(), 1u);
  ASSERT_EQ(r.attention[0].size(), 1u);
  const Matrix& weights = r.attention[0][0];
  const NaiveSingleHead ref = naive_single_head(m, img);
  ASSERT_EQ(static_cast<std::size_t>(weights.rows()), ref.weights.size());
  ASSERT_EQ(r.tokens.rows(), weights.rows());
  ASSERT_EQ(r.tokens.cols(), m.d_head());
  ASSERT_TRUE(weights.allFinite()) << weights;
  for (Eigen::Index i = 0; i < weights.rows(); ++i) {
    for (Eigen::Index j = 0; j < weights.cols(); ++j)
      EXPECT_NEAR(weights(i, j), ref.weights[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], 1e-5) << i << "," << j;
    for (Eigen::Index t = 0; t < r.tokens.cols(); ++t)
      EXPECT_NEAR(r.tokens(i, t), ref.output[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)],
                  1e-5 * std::max(1.0, std::abs(ref.output[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)])));
  }
  // The class token's row over the patches, in raster order: patch j at (j / g, j % g).
  const int g = img.width / m.patch_size;
  const Matrix cls_map = class_token_map(weights, m.first_patch_token(), g, g);
  for (int j = 0; j < g * g; ++j) EXPECT_NEAR(cls_map(j / g, j % g), ref.weights[0][static_cast<std::size_t>(1 + j)], 1e-5) << j;
  // Stopping at the layer (what the image pipeline does) gives the same weights, bit for bit.
  ForwardOptions stop;
  stop.last_layer = 0;
  EXPECT_EQ(forward(m, img, stop).attention.at(0).at(0), weights);
}

TEST(SingleHead, MatchesANaiveForwardAndLaysTheClassRowOnTheGrid) {
  VitModel m = tiny_model();
  m.w_patch = m.w_patch * 0.001f;  // keep the scores in softmax's lively range
  expect_single_head_matches_naive(m, position_coded_image(4, 4));
}

TEST(SingleHead, ScoresInTheHundredsStayFinite) {
  // Scores of a few hundred: exp() overflows float unless each row's maximum is subtracted first.
  VitModel m = tiny_model();
  m.w_patch = m.w_patch * 0.05f;
  const ImageTensor img = position_coded_image(4, 4);
  const Matrix x = embed_image(m, img);
  const EncoderBlock& b = m.blocks[0];
  const Matrix q = x * b.w_qkv.topRows(2).transpose(),
               k = (x * b.w_qkv.middleRows(2, 2).transpose()).rowwise() + b.b_qkv.segment(2, 2);
  ASSERT_GT((q * k.transpose()).maxCoeff() / std::sqrt(2.0f), 200.0f) << "the test's own scores are not large";
  expect_single_head_matches_naive(m, img);
}

TEST(SingleHead, SeededModelMatchesTheNaiveForwardWithDkOtherThanDOverH) {
  const VitModel m = make_seeded_model(SeededShape{16, 4, 12, 5}, 7);  // D = 12, d_k = 5
  ImageTensor img = position_coded_image(16, 16);
  for (float& v : img.chw) v *= 1e-3f;
  expect_single_head_matches_naive(m, img);
}

TEST(Validate, NamesTheTensorThatDoesNotFit) {
  VitModel m = tiny_model();
  m.blocks[0].w_qkv = Matrix::Zero(6, 4);
  try {
    m.validate("m.safetensors");
    FAIL() << "validate accepted a misshaped qkv weight";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "m.safetensors: block 0 qkv weight is [6, 4], expected [6, 3]");
  }
  m = tiny_model();
  m.cls_token(1) = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(m.validate("m"), Error);
  m = tiny_model();
  m.pos_embed = Matrix::Zero(4, 3);  // 3 patches for a 2×2 grid
  EXPECT_THROW(m.validate("m"), Error);
}

TEST(Validate, AnUnprojectedBlockIsTheLastAndNothingReadsItsOutput) {
  VitModel m = tiny_model();
  m.blocks.push_back(m.blocks[0]);  // a second block would read a stream d_k wide
  try {
    m.validate("m");
    FAIL() << "validate accepted an unprojected block before another";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block 0 has no attention output projection"), std::string::npos) << e.what();
  }
  m = tiny_model();
  m.final_norm = {RowVector::Ones(3), RowVector::Zero(3)};
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
