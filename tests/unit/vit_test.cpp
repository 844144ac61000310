// The encoder against a naive double-precision forward written from the papers' equations,
// and the small layers and map functions on hand-made inputs.
#include "core/vit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/attention_maps.hpp"
#include "core/error.hpp"
#include "core/layers.hpp"
#include "core/pos_embed.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

using Dbl = std::vector<std::vector<double>>;  // rows of doubles, no Eigen

double at(const RowVector& v, std::size_t j) { return v.size() ? static_cast<double>(v(static_cast<Eigen::Index>(j))) : 0.0; }

// y = x·Wᵀ + b, one multiply-add at a time
Dbl naive_linear(const Dbl& x, const Matrix& w, const RowVector& b) {
  Dbl y(x.size(), std::vector<double>(static_cast<std::size_t>(w.rows())));
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t o = 0; o < y[i].size(); ++o) {
      double s = at(b, o);
      for (std::size_t k = 0; k < x[i].size(); ++k) s += x[i][k] * double{w(static_cast<Eigen::Index>(o), static_cast<Eigen::Index>(k))};
      y[i][o] = s;
    }
  return y;
}

// The reference's own LayerNorm ε, not read from the model: tiny_vit() sets the same value
// in the model, so a model whose ε is lost or misapplied disagrees. Large enough (against
// token variances near 1) that ε outside the square root, or a default ε, shows.
constexpr double kReferenceEps = 0.05;
constexpr float kTinyVitEps = 0.05f;

Dbl naive_layer_norm(const Dbl& x, const LayerNorm& n, double eps = kReferenceEps) {
  Dbl y = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double mean = 0, var = 0;
    for (double v : x[i]) mean += v;
    mean /= static_cast<double>(x[i].size());
    for (double v : x[i]) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x[i].size());
    for (std::size_t j = 0; j < x[i].size(); ++j) y[i][j] = (x[i][j] - mean) / std::sqrt(var + eps) * at(n.weight, j) + at(n.bias, j);
  }
  return y;
}

struct NaiveOut {
  std::vector<std::vector<Dbl>> attention;  // [layer][head]
  Dbl tokens;
};

NaiveOut naive_forward(const VitModel& m, const ImageTensor& img) {
  const int p = m.patch_size, gh = img.height / p, gw = img.width / p, d = m.d_model(), h = m.n_heads, dh = d / h;
  const std::size_t first = static_cast<std::size_t>(m.first_patch_token());
  Dbl x(first + static_cast<std::size_t>(gh * gw), std::vector<double>(static_cast<std::size_t>(d)));
  for (int j = 0; j < d; ++j) {
    x[0][static_cast<std::size_t>(j)] = m.cls_token(j);
    if (m.has_dist()) x[1][static_cast<std::size_t>(j)] = m.dist_token(j);  // [cls, dist, registers…]
    for (int r = 0; r < m.n_registers(); ++r)
      x[first - static_cast<std::size_t>(m.n_registers() - r)][static_cast<std::size_t>(j)] = m.register_tokens(r, j);
    for (int t = 0; t < m.pos_prefix; ++t) x[static_cast<std::size_t>(t)][static_cast<std::size_t>(j)] += double{m.pos_embed(t, j)};
  }
  for (int py = 0; py < gh; ++py)
    for (int px = 0; px < gw; ++px) {
      auto& t = x[first + static_cast<std::size_t>(py * gw + px)];
      for (int o = 0; o < d; ++o) {
        double s = at(m.b_patch, static_cast<std::size_t>(o)) + double{m.pos_embed(m.pos_prefix + py * gw + px, o)};
        for (int c = 0; c < 3; ++c)
          for (int y = 0; y < p; ++y)
            for (int xx = 0; xx < p; ++xx) s += double{m.w_patch(o, (c * p + y) * p + xx)} * double{img.at(c, py * p + y, px * p + xx)};
        t[static_cast<std::size_t>(o)] = s;
      }
    }
  if (m.norm_pre.present()) x = naive_layer_norm(x, m.norm_pre);  // CLIP's ln_pre: after the positions
  NaiveOut out;
  const std::size_t n = x.size();
  for (const EncoderBlock& b : m.blocks) {
    const Dbl qkv = naive_linear(naive_layer_norm(x, b.norm1), b.w_qkv, b.b_qkv);
    Dbl a(n, std::vector<double>(static_cast<std::size_t>(d)));
    out.attention.emplace_back();
    for (int hh = 0; hh < h; ++hh) {
      Dbl w(n, std::vector<double>(n));
      for (std::size_t i = 0; i < n; ++i) {
        double mx = -1e300;
        for (std::size_t j = 0; j < n; ++j) {
          double s = 0;
          for (int k = 0; k < dh; ++k) s += qkv[i][static_cast<std::size_t>(hh * dh + k)] * qkv[j][static_cast<std::size_t>(d + hh * dh + k)];
          w[i][j] = s / std::sqrt(double(dh));
          mx = std::max(mx, w[i][j]);
        }
        double sum = 0;
        for (auto& v : w[i]) sum += (v = std::exp(v - mx));
        for (auto& v : w[i]) v /= sum;
        for (int k = 0; k < dh; ++k) {
          double s = 0;
          for (std::size_t j = 0; j < n; ++j) s += w[i][j] * qkv[j][static_cast<std::size_t>(2 * d + hh * dh + k)];
          a[i][static_cast<std::size_t>(hh * dh + k)] = s;
        }
      }
      out.attention.back().push_back(w);
    }
    const Dbl proj = naive_linear(a, b.w_proj, b.b_proj);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < static_cast<std::size_t>(d); ++j) x[i][j] += proj[i][j] * (b.ls1.size() ? at(b.ls1, j) : 1.0);
    Dbl hid = naive_linear(naive_layer_norm(x, b.norm2), b.w_fc1, b.b_fc1);
    for (auto& row : hid)
      for (auto& v : row) v = m.gelu == Gelu::erf     ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                              : m.gelu == Gelu::quick ? v / (1 + std::exp(-1.702 * v))  // CLIP's QuickGELU
                                                      : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    const Dbl mlp = naive_linear(hid, b.w_fc2, b.b_fc2);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < static_cast<std::size_t>(d); ++j) x[i][j] += mlp[i][j] * (b.ls2.size() ? at(b.ls2, j) : 1.0);
  }
  out.tokens = m.final_norm.present() ? naive_layer_norm(x, m.final_norm) : x;
  return out;
}

RowVector random_row(Eigen::Index n, std::mt19937& rng, float scale = 1.0f) {
  return test::random_matrix(1, n, rng, scale);
}

// qk_gain scales the query and key weights: large gains give scores in the hundreds.
// dist: a distillation token after the class token (positions then cover both: pos_prefix 2);
// norm_pre: a LayerNorm before the first block (CLIP's ln_pre).
VitModel tiny_vit(std::mt19937& rng, int registers, bool layer_scale, Gelu gelu, int pos_prefix = 1, float qk_gain = 1.0f,
                  bool dist = false, bool norm_pre = false) {
  const int d = 8, p = 2, g = 3, mlp = 16;
  VitModel m;
  m.patch_size = p;
  m.n_heads = 2;
  m.eps = kTinyVitEps;
  m.gelu = gelu;
  m.w_patch = test::random_matrix(d, 3 * p * p, rng, 0.5f);
  m.b_patch = random_row(d, rng, 0.1f);
  m.cls_token = random_row(d, rng);
  if (dist) m.dist_token = random_row(d, rng);
  if (registers > 0) m.register_tokens = test::random_matrix(registers, d, rng);
  m.pos_embed = test::random_matrix(pos_prefix + g * g, d, rng, 0.2f);
  m.pos_prefix = pos_prefix;
  m.grid_h = m.grid_w = g;
  auto ln = [&] { return LayerNorm{(random_row(d, rng, 0.5f).array() + 1.0f).matrix(), random_row(d, rng, 0.1f)}; };
  if (norm_pre) m.norm_pre = ln();
  for (int l = 0; l < 3; ++l) {
    EncoderBlock b;
    b.norm1 = ln();
    Matrix w_qkv = test::random_matrix(3 * d, d, rng, 0.8f);
    w_qkv.topRows(2 * d) *= qk_gain;  // rows of q and k
    b.w_qkv = w_qkv;
    b.b_qkv = random_row(3 * d, rng, 0.1f);
    b.w_proj = test::random_matrix(d, d, rng, 0.4f);
    b.b_proj = random_row(d, rng, 0.1f);
    b.norm2 = ln();
    b.w_fc1 = test::random_matrix(mlp, d, rng, 0.4f);
    b.b_fc1 = random_row(mlp, rng, 0.1f);
    b.w_fc2 = test::random_matrix(d, mlp, rng, 0.3f);
    b.b_fc2 = random_row(d, rng, 0.1f);
    if (layer_scale) b.ls1 = random_row(d, rng), b.ls2 = random_row(d, rng);
    m.blocks.push_back(b);
  }
  m.final_norm = ln();
  m.validate("tiny");
  return m;
}

ImageTensor random_image(int h, int w, std::mt19937& rng) { return test::random_image(h, w, rng, 2.0f); }

struct Variant {
  int registers;
  bool layer_scale;
  Gelu gelu;
  int pos_prefix = 1;  // position rows before the patches' own
  float qk_gain = 1.0f;
  bool dist = false;
  bool norm_pre = false;
};

class ForwardVsNaive : public ::testing::TestWithParam<Variant> {};

TEST_P(ForwardVsNaive, EveryLayerEveryHeadAndTheTokensAgree) {
  std::mt19937 rng(42);
  const Variant v = GetParam();
  const VitModel m = tiny_vit(rng, v.registers, v.layer_scale, v.gelu, v.pos_prefix, v.qk_gain, v.dist, v.norm_pre);
  ASSERT_NE(m.pos_embed.row(0).cwiseAbs().maxCoeff(), 0.0f) << "the class token's position must show";
  const ImageTensor img = random_image(6, 6, rng);
  // Scores in the hundreds: float rounding of a score of 300 is ~2e-5, and the probabilities follow.
  const double attn_tol = v.qk_gain > 1 ? 1e-4 : 2e-6, token_tol = v.qk_gain > 1 ? 1e-4 : 2e-5;
  ForwardOptions o;
  o.keep_from_layer = 0;
  const ForwardResult r = forward(m, img, o);
  const NaiveOut ref = naive_forward(m, img);
  ASSERT_EQ(r.attention.size(), 3u);
  for (std::size_t l = 0; l < 3; ++l)
    for (std::size_t h = 0; h < 2; ++h) {
      const Matrix& a = r.attention[l][h];
      ASSERT_EQ(static_cast<std::size_t>(a.rows()), ref.attention[l][h].size());
      for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
          EXPECT_NEAR(a(i, j), ref.attention[l][h][static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], attn_tol)
              << "layer " << l << " head " << h;
    }
  for (Eigen::Index i = 0; i < r.tokens.rows(); ++i)
    for (Eigen::Index j = 0; j < r.tokens.cols(); ++j)
      EXPECT_NEAR(r.tokens(i, j), ref.tokens[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)], token_tol);
}

INSTANTIATE_TEST_SUITE_P(Vit, ForwardVsNaive,
                         ::testing::Values(Variant{0, false, Gelu::erf}, Variant{0, true, Gelu::tanh},
                                           Variant{4, true, Gelu::erf}, Variant{2, false, Gelu::erf, 0},
                                           Variant{2, false, Gelu::erf, 3}, Variant{0, false, Gelu::erf, 1, 12.0f},
                                           Variant{0, false, Gelu::quick, 1, 1.0f, false, true},
                                           Variant{0, false, Gelu::erf, 2, 1.0f, true}, Variant{2, true, Gelu::erf, 4, 1.0f, true}),
                         [](const auto& param_info) {
                           const Variant& v = param_info.param;
                           return std::to_string(v.registers) + "registers_" + std::to_string(v.pos_prefix) + "prefixpos_" + (v.layer_scale ? "layerscale_" : "") +
                                  (v.qk_gain > 1 ? "hugescores_" : "") + (v.dist ? "dist_" : "") + (v.norm_pre ? "normpre_" : "") +
                                  gelu_name(v.gelu);
                         });

TEST(Forward, StoppingAtALayerGivesThatLayersAttentionOnly) {
  std::mt19937 rng(3);
  const VitModel m = tiny_vit(rng, 0, false, Gelu::erf);
  const ImageTensor img = random_image(6, 6, rng);
  ForwardOptions all;
  all.keep_from_layer = 0;
  const ForwardResult full = forward(m, img, all);
  ForwardOptions one;
  one.last_layer = 1;
  const ForwardResult part = forward(m, img, one);
  ASSERT_EQ(part.attention.size(), 1u);
  EXPECT_EQ(part.first_kept_layer, 1);
  EXPECT_EQ(part.tokens.size(), 0);  // the rest of the network was not run
  EXPECT_TRUE(part.attention[0][1].isApprox(full.attention[1][1], 1e-6f));
}

TEST(Forward, AnotherGridResamplesThePositionsAndRuns) {
  std::mt19937 rng(5);
  const VitModel m = tiny_vit(rng, 2, false, Gelu::erf);
  const ForwardResult r = forward(m, random_image(8, 10, rng));  // 4×5 patches, trained 3×3
  EXPECT_EQ(r.attention[0][0].rows(), 1 + 2 + 4 * 5);
  for (Eigen::Index i = 0; i < r.attention[0][0].rows(); ++i) EXPECT_NEAR(r.attention[0][0].row(i).sum(), 1.0f, 1e-5f);
}

TEST(Layers, GeluMatchesTheDefinition) {
  Matrix x(1, 7);
  x << -4.0f, -1.5f, -0.3f, 0.0f, 0.2f, 1.0f, 3.5f;
  Matrix e = x, t = x;
  gelu_inplace(e, Gelu::erf);
  gelu_inplace(t, Gelu::tanh);
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const double v = x(0, j);
    EXPECT_NEAR(e(0, j), 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(t(0, j), 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))), 1e-6);
  }
}

TEST(Layers, LayerNormEpsIsInsideTheSquareRoot) {
  // mean 2.5, biased variance 1.25; ε 0.75 → (x − 2.5)/√(1.25 + 0.75) = (x − 2.5)/√2
  const Matrix x = matrix_from_rows({{1, 2, 3, 4}});
  const LayerNorm n{matrix_from_rows({{1, 1, 1, 1}}), matrix_from_rows({{0, 0, 0, 0}})};
  const Matrix y = layer_norm(x, n, 0.75f);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(y(0, j), (j + 1 - 2.5) / std::sqrt(2.0), 1e-6) << j;
}

TEST(Layers, LayerNormOfAHandRow) {
  // mean 2.5, biased variance 1.25 → (x − 2.5)/√1.25 · γ + β
  const Matrix x = matrix_from_rows({{1, 2, 3, 4}});
  const LayerNorm n{matrix_from_rows({{1, 2, 1, 1}}), matrix_from_rows({{0, 0, 0, 1}})};
  const Matrix y = layer_norm(x, n, 0.0f);
  const float s = 1.0f / std::sqrt(1.25f);
  EXPECT_NEAR(y(0, 0), -1.5f * s, 1e-6f);
  EXPECT_NEAR(y(0, 1), -0.5f * s * 2, 1e-6f);
  EXPECT_NEAR(y(0, 2), 0.5f * s, 1e-6f);
  EXPECT_NEAR(y(0, 3), 1.5f * s + 1, 1e-6f);
}

TEST(PosEmbed, SameGridIsUnchangedAndConstantsStayConstant) {
  std::mt19937 rng(1);
  const Matrix pos = test::random_matrix(9, 4, rng);
  EXPECT_EQ(interpolate_pos_embed(pos, 3, 3, 3, 3), pos);
  const Matrix flat = Matrix::Constant(9, 2, 0.25f);  // cubic weights sum to 1
  EXPECT_TRUE(interpolate_pos_embed(flat, 3, 3, 5, 7).isApproxToConstant(0.25f, 1e-6f));
}

TEST(PosEmbed, MatchesTorchsBicubicInterpolate) {
  // Golden numbers printed by PyTorch 1.13.1:
  //   torch.nn.functional.interpolate(x, size=…, mode="bicubic", align_corners=False)
  Matrix line(4, 1);
  line << 0, 1, 2, 3;
  const Matrix out = interpolate_pos_embed(line, 1, 4, 1, 8);  // x = [[[[0, 1, 2, 3]]]], size (1, 8)
  const float doubled[8] = {-0.10546875f, 0.19140625f, 0.66796875f, 1.296875f, 1.703125f, 2.33203125f, 2.80859375f, 3.10546875f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(out(i, 0), doubled[i], 1e-6f) << i;

  Matrix grid(8, 1);  // x = [[[[0, 1, 4, 2], [1, 0, 0, 3]]]], size (3, 5): both axes, up and down
  grid << 0, 1, 4, 2, 1, 0, 0, 3;
  const Matrix out2 = interpolate_pos_embed(grid, 2, 4, 3, 5);
  const float expected[15] = {-0.15810249745845795f, 0.3999083340167999f, 3.0552306175231934f, 4.027590751647949f,
                              1.76532781124115f,     0.5000001192092896f, 0.3346254527568817f,  1.203125f,
                              2.304875612258911f,    2.5303752422332764f, 1.1581026315689087f,  0.26934269070625305f,
                              -0.6489794254302979f,  0.5821622014045715f, 3.2954235076904297f};
  // float rounding of terms as large as 4 (the largest input) after cancellation: 1e-6 of that
  for (int i = 0; i < 15; ++i) EXPECT_NEAR(out2(i, 0), expected[i], 4e-6f) << i;
}

struct Golden {
  const char* name;
  PosInterp mode;
  int grid_h, grid_w, new_h, new_w;
  std::vector<float> input, expected;
};

TEST(PosEmbed, EachLibrarysWayMatchesTorch) {
  // Printed by PyTorch 1.13.1, torch.nn.functional.interpolate(x, …, mode="bicubic"):
  const std::vector<float> grid = {0, 1, 4, 2, 1, 0, 0, 3};
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const std::vector<Golden> cases = {
      {"align_corners=True", PosInterp::align_corners, 2, 4, 3, 5, grid,
       {0.0f, 0.45703125f, 2.78125f, 3.86328125f, 2.0f, 0.5f, 0.341796875f, 1.203125f, 2.271484375f, 2.5f, 1.0f,
        0.2265625f, -0.375f, 0.6796875f, 3.0f}},
      {"antialias=True, shrinking", PosInterp::antialias, 1, 16, 1, 5, ramp,
       {1.1704412698745728f, 4.232781887054443f, 7.500000476837158f, 10.767217636108398f, 13.829559326171875f}},
      {"antialias=True, growing", PosInterp::antialias, 2, 4, 3, 5, grid,
       {-0.11475177854299545f, 0.5203716158866882f, 2.880756139755249f, 3.8373465538024902f, 1.8334389925003052f, 0.5f,
        0.39311686158180237f, 1.21875f, 2.2472126483917236f, 2.521634578704834f, 1.1147520542144775f,
        0.26586204767227173f, -0.44325685501098633f, 0.6570777893066406f, 3.2098309993743896f}},
      {"scale_factor=(n+0.1)/m", PosInterp::offset, 2, 4, 3, 5, grid,
       {-0.16600708663463593f, 0.3679295778274536f, 2.909881353378296f, 4.159955978393555f, 1.8590483665466309f,
        0.45905590057373047f, 0.3355628252029419f, 1.2496857643127441f, 2.3842124938964844f, 2.4703495502471924f,
        1.1395927667617798f, 0.30032312870025635f, -0.5578532218933105f, 0.45086920261383057f, 3.1359007358551025f}},
      {"scale_factor=(n+0.1)/m, shrinking", PosInterp::offset, 1, 16, 1, 5, ramp,
       {1.0961990356445312f, 4.253968715667725f, 7.378492832183838f, 10.485286712646484f, 13.589864730834961f}},
  };
  for (const Golden& g : cases) {
    const Matrix in = Eigen::Map<const Matrix>(g.input.data(), static_cast<Eigen::Index>(g.input.size()), 1);
    const Matrix out = interpolate_pos_embed(in, g.grid_h, g.grid_w, g.new_h, g.new_w, g.mode);
    ASSERT_EQ(static_cast<std::size_t>(out.rows()), g.expected.size()) << g.name;
    const float largest = in.cwiseAbs().maxCoeff();  // float rounding of the largest term
    for (std::size_t i = 0; i < g.expected.size(); ++i)
      EXPECT_NEAR(out(static_cast<Eigen::Index>(i), 0), g.expected[i], 1e-6f * largest) << g.name << " [" << i << "]";
  }
}

TEST(AttentionMaps, FuseHeads) {
  const std::vector<Matrix> heads = {matrix_from_rows({{0.2f, 0.8f}}), matrix_from_rows({{0.6f, 0.4f}})};
  EXPECT_TRUE(fuse_heads(heads, HeadFusion::mean).isApprox(matrix_from_rows({{0.4f, 0.6f}})));
  EXPECT_EQ(fuse_heads(heads, HeadFusion::max), matrix_from_rows({{0.6f, 0.8f}}));
  EXPECT_EQ(fuse_heads(heads, HeadFusion::min), matrix_from_rows({{0.2f, 0.4f}}));
}

Matrix rollout_of(const std::vector<std::vector<Matrix>>& layers, float discard_ratio,
                  HeadFusion fusion = HeadFusion::mean) {
  AttentionRollout r(fusion, discard_ratio);
  for (const auto& heads : layers) r.add_layer(heads);
  return r.result();
}

TEST(AttentionMaps, RolloutOfOneLayerIsTheResidualMix) {
  const Matrix a = matrix_from_rows({{0.5f, 0.5f}, {0.25f, 0.75f}});
  const Matrix r = rollout_of({{a}}, 0.0f);
  EXPECT_TRUE(r.isApprox(matrix_from_rows({{0.75f, 0.25f}, {0.125f, 0.875f}})));  // (A + I)/2, rows already sum to 1
  // Two layers multiply, later on the left.
  const Matrix b = matrix_from_rows({{0.0f, 1.0f}, {1.0f, 0.0f}});
  const Matrix r2 = rollout_of({{a}, {b}}, 0.0f);
  const Matrix bb = matrix_from_rows({{0.5f, 0.5f}, {0.5f, 0.5f}});
  EXPECT_TRUE(r2.isApprox(bb * r));
}

TEST(AttentionMaps, RolloutFusesTheHeadsAsAsked) {
  const std::vector<Matrix> heads = {matrix_from_rows({{0.2f, 0.8f}, {0.6f, 0.4f}}),
                                     matrix_from_rows({{0.6f, 0.4f}, {0.1f, 0.9f}})};
  // max [[0.6, 0.8], [0.6, 0.9]] → (A + I)/2 = [[0.8, 0.4], [0.3, 0.95]] → rows / (1.2, 1.25)
  EXPECT_TRUE(rollout_of({heads}, 0.0f, HeadFusion::max).isApprox(matrix_from_rows({{2.0f / 3, 1.0f / 3}, {0.24f, 0.76f}})));
  // min [[0.2, 0.4], [0.1, 0.4]] → [[0.6, 0.2], [0.05, 0.7]] → rows / (0.8, 0.75)
  EXPECT_TRUE(rollout_of({heads}, 0.0f, HeadFusion::min).isApprox(matrix_from_rows({{0.75f, 0.25f}, {1.0f / 15, 14.0f / 15}})));
  // mean [[0.4, 0.6], [0.35, 0.65]] → [[0.7, 0.3], [0.175, 0.825]], rows already sum to 1
  EXPECT_TRUE(rollout_of({heads}, 0.0f, HeadFusion::mean).isApprox(matrix_from_rows({{0.7f, 0.3f}, {0.175f, 0.825f}})));
}

TEST(AttentionMaps, RolloutDiscardsTheWeakestLinksButNotTheClassTokensOwn) {
  // Smallest entry is (0, 0) = 0.1: discarding one link must spare it and drop nothing else.
  const Matrix a = matrix_from_rows({{0.1f, 0.9f}, {0.3f, 0.7f}});
  const Matrix kept = rollout_of({{a}}, 0.25f);  // ⌊4 · 0.25⌋ = 1 link
  EXPECT_TRUE(kept.isApprox(rollout_of({{a}}, 0.0f)));
  // Two links: (0, 0) is spared, (1, 0) = 0.3 goes → row 1 becomes (0 + 0, 0.7 + 1)/2 normalised = (0, 1).
  const Matrix dropped = rollout_of({{a}}, 0.5f);
  EXPECT_NEAR(dropped(1, 0), 0.0f, 1e-7f);
  EXPECT_NEAR(dropped(1, 1), 1.0f, 1e-6f);
  EXPECT_NEAR(dropped(0, 0), 0.55f, 1e-6f);
}

TEST(AttentionMaps, ClassTokenMapSkipsRegisters) {
  // tokens: cls, 2 registers, 2×3 patches
  Matrix a = Matrix::Zero(9, 9);
  for (int j = 0; j < 9; ++j) a(0, j) = static_cast<float>(j);
  const Matrix map = class_token_map(a, 3, 2, 3);
  EXPECT_EQ(map, matrix_from_rows({{3, 4, 5}, {6, 7, 8}}));
  EXPECT_THROW(class_token_map(a, 1, 2, 3), Error);
}

// DINO's own formulation (visualize_attention.py): sort ascending, normalise to sum 1,
// cumulative sum, keep the patches whose cumulative value exceeds 1 − t.
Matrix dino_mask(const Matrix& map, double t) {
  std::vector<std::pair<double, Eigen::Index>> sorted;
  double total = 0;
  for (Eigen::Index i = 0; i < map.size(); ++i) sorted.emplace_back(double{map.data()[i]}, i), total += double{map.data()[i]};
  std::sort(sorted.begin(), sorted.end());
  Matrix mask = Matrix::Zero(map.rows(), map.cols());
  double cumval = 0;
  for (const auto& [value, index] : sorted) {
    cumval += value / total;
    if (cumval > 1 - t) mask.data()[index] = 1;
  }
  return mask;
}

TEST(AttentionMaps, MassMaskIsDinosMaskAtAsymmetricThresholds) {
  // Sorted down: 0.31, 0.24, 0.13, 0.09, 0.08, 0.07, 0.05, 0.02, 0.01 (sum 1); the mass above
  // each: 0, 0.31, 0.55, 0.68, 0.77, 0.85, 0.92, 0.97, 0.99. A patch is kept while that is < t.
  const Matrix map = matrix_from_rows({{0.02f, 0.31f, 0.05f}, {0.09f, 0.01f, 0.24f}, {0.13f, 0.08f, 0.07f}});
  const Matrix top_30 = matrix_from_rows({{0, 1, 0}, {0, 0, 0}, {0, 0, 0}});
  const Matrix top_90 = matrix_from_rows({{0, 1, 0}, {1, 0, 1}, {1, 1, 1}});
  EXPECT_EQ(dino_mask(map, 0.3), top_30) << "the test's own oracle";
  EXPECT_EQ(dino_mask(map, 0.9), top_90) << "the test's own oracle";
  EXPECT_EQ(mass_mask(map, 0.3f), top_30);
  EXPECT_EQ(mass_mask(map, 0.9f), top_90);
  // Not normalised (a class row also holds the class token's own share): the same masks.
  EXPECT_EQ(mass_mask(map * 0.37f, 0.3f), top_30);
  EXPECT_EQ(mass_mask(map * 0.37f, 0.9f), top_90);
  // Random maps, many thresholds, against the oracle.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int trial = 0; trial < 50; ++trial) {
    Matrix m(5, 7);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = std::pow(u(rng), 3.0f);  // skewed, as attention is
    for (double t : {0.1, 0.3, 0.5, 0.6, 0.9, 0.97}) EXPECT_EQ(mass_mask(m, static_cast<float>(t)), dino_mask(m, t)) << trial << " t=" << t;
  }
}

TEST(AttentionMaps, MassMaskKeepsTheFewestPatchesHoldingTheFraction) {
  const Matrix map = matrix_from_rows({{0.5f, 0.1f}, {0.3f, 0.1f}});
  EXPECT_EQ(mass_mask(map, 0.45f), matrix_from_rows({{1, 0}, {0, 0}}));  // 0.5 alone holds 45 %
  EXPECT_EQ(mass_mask(map, 0.6f), matrix_from_rows({{1, 0}, {1, 0}}));  // needs 0.5 + 0.3
  EXPECT_EQ(mass_mask(map, 1.0f).sum(), 4.0f);
}

TEST(VitModel, ValidateNamesTheMisfit) {
  std::mt19937 rng(9);
  VitModel m = tiny_vit(rng, 0, false, Gelu::erf);
  m.blocks[1].w_fc2 = test::random_matrix(8, 15, rng);
  try {
    m.validate("m.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "m.safetensors: block 1 mlp fc2 weight is [8, 15], expected [8, 16]");
  }
  m = tiny_vit(rng, 0, false, Gelu::erf);
  m.n_heads = 3;
  EXPECT_THROW(m.validate("m"), Error);
}

}  // namespace
}  // namespace vitattn
