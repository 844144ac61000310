// Deletion and insertion curves (core/faithfulness.hpp) on hand-made inputs: the ranking and
// its ties, ⌈k·N/K⌉, the trapezoid rule, the random map's generator against splitmix64's
// published first outputs, and each step's input against one built here pixel by pixel.
// tests/oracle/test_faithfulness.py recomputes the whole thing in numpy/torch from the CLI.
#include "core/faithfulness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/classify.hpp"
#include "core/error.hpp"
#include "core/vit.hpp"
#include "pipeline/faithfulness_part.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

TEST(Faithfulness, RankingIsHighestFirstTiesByIndex) {
  const Matrix map = matrix_from_rows({{0.2f, 0.9f, 0.2f}, {0.5f, 0.9f, 0.1f}});
  // 0.9 at 1 and 4 (1 first), 0.5 at 3, 0.2 at 0 and 2 (0 first), 0.1 at 5
  EXPECT_EQ(patch_ranking(map), (std::vector<int>{1, 4, 3, 0, 2, 5}));
  const Matrix flat = Matrix::Constant(2, 2, 0.25f);
  EXPECT_EQ(patch_ranking(flat), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Faithfulness, RankingRefusesNonFinite) {
  Matrix map = matrix_from_rows({{0.2f, 0.9f}});
  map(0, 0) = std::nanf("");
  EXPECT_THROW(patch_ranking(map), Error);
}

TEST(Faithfulness, PatchesAtStepIsCeiling) {
  // N = 10, K = 4: 0, 2.5 → 3, 5, 7.5 → 8, 10
  const std::vector<int> want{0, 3, 5, 8, 10};
  for (int k = 0; k <= 4; ++k) EXPECT_EQ(patches_at_step(k, 10, 4), want[static_cast<std::size_t>(k)]) << "k=" << k;
  // K > N: N = 3, K = 4: 0, 0.75 → 1, 1.5 → 2, 2.25 → 3, 3
  const std::vector<int> more{0, 1, 2, 3, 3};
  for (int k = 0; k <= 4; ++k) EXPECT_EQ(patches_at_step(k, 3, 4), more[static_cast<std::size_t>(k)]) << "k=" << k;
  // N = 196, K = 16: exact multiples stay exact (k = 4: 49), no float rounding up
  EXPECT_EQ(patches_at_step(4, 196, 16), 49);
  EXPECT_EQ(patches_at_step(16, 196, 16), 196);
  EXPECT_EQ(patches_at_step(1, 196, 16), 13);  // 12.25 → 13
}

TEST(Faithfulness, TrapezoidRule) {
  // y = x on 0, 0.5, 1: exactly 1/2; y = x² on 0, 0.5, 1: (0.125 + 0.625) / 2 = 0.375
  EXPECT_DOUBLE_EQ(trapezoid_auc({0, 0.5, 1}, {0, 0.5, 1}), 0.5);
  EXPECT_DOUBLE_EQ(trapezoid_auc({0, 0.5, 1}, {0, 0.25, 1}), 0.375);
  // uneven steps and a repeated x (K > N): the zero-width step adds nothing
  EXPECT_DOUBLE_EQ(trapezoid_auc({0, 0.25, 0.25, 1}, {1, 0.5, 0.5, 0}), 0.25 * 0.75 + 0.75 * 0.25);
  EXPECT_DOUBLE_EQ(trapezoid_auc({0}, {1}), 0.0);
}

TEST(Faithfulness, RandomMapIsSplitmix64) {
  // splitmix64 from state 0: first outputs 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (Vigna's
  // reference splitmix64.c); a cell is the top 24 bits over 2^24.
  const Matrix m = random_map(1, 2, 0);
  EXPECT_EQ(m(0, 0), static_cast<float>(0xe220a8) / 16777216.0f);
  EXPECT_EQ(m(0, 1), static_cast<float>(0x6e789e) / 16777216.0f);
  const Matrix a = random_map(3, 4), b = random_map(3, 4);
  EXPECT_EQ(a, b);                   // fixed seed: the same map every call
  EXPECT_NE(random_map(3, 4, 1), a);  // another seed, another map
  EXPECT_TRUE((a.array() >= 0.0f).all() && (a.array() < 1.0f).all());
}

VitModel tiny_classifier(std::mt19937& rng) {
  const int d = 8, p = 2, g = 3, mlp = 16, classes = 4;
  auto row = [&](Eigen::Index n, float s) -> RowVector { return test::random_matrix(1, n, rng, s); };
  VitModel m;
  m.patch_size = p;
  m.n_heads = 2;
  m.w_patch = test::random_matrix(d, 3 * p * p, rng, 0.8f);
  m.b_patch = row(d, 0.1f);
  m.cls_token = row(d, 1.0f);
  m.pos_embed = test::random_matrix(1 + g * g, d, rng, 0.2f);
  m.grid_h = m.grid_w = g;
  auto ln = [&] { return LayerNorm{(row(d, 0.3f).array() + 1.0f).matrix(), row(d, 0.1f)}; };
  for (int l = 0; l < 2; ++l) {
    EncoderBlock b;
    b.norm1 = ln();
    b.w_qkv = test::random_matrix(3 * d, d, rng, 0.8f);
    b.b_qkv = row(3 * d, 0.1f);
    b.w_proj = test::random_matrix(d, d, rng, 0.4f);
    b.b_proj = row(d, 0.1f);
    b.norm2 = ln();
    b.w_fc1 = test::random_matrix(mlp, d, rng, 0.4f);
    b.b_fc1 = row(mlp, 0.1f);
    b.w_fc2 = test::random_matrix(d, mlp, rng, 0.3f);
    b.b_fc2 = row(d, 0.1f);
    m.blocks.push_back(b);
  }
  m.final_norm = ln();
  m.w_head = test::random_matrix(classes, d, rng, 2.0f);
  m.b_head = row(classes, 0.1f);
  m.validate("tiny classifier");
  return m;
}

ImageTensor random_image(int h, int w, std::mt19937& rng) {
  ImageTensor t{h, w, std::vector<float>(static_cast<std::size_t>(3 * h * w))};
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (float& v : t.chw) v = u(rng);
  return t;
}

double probability(const VitModel& m, const ImageTensor& x, int c) {
  return softmax(forward(m, x).logits)[static_cast<std::size_t>(c)];
}

// The input of a step, built pixel by pixel: pixel (y, x) is in patch (y/P)·grid_w + x/P;
// it takes `changed`'s value when that patch is among `chosen`, else `base`'s.
ImageTensor mixed(const ImageTensor& base, const ImageTensor& changed, const std::vector<int>& chosen, int p, int grid_w) {
  ImageTensor out = base;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < base.height; ++y)
      for (int x = 0; x < base.width; ++x) {
        const int patch = (y / p) * grid_w + x / p;
        if (std::find(chosen.begin(), chosen.end(), patch) == chosen.end()) continue;
        const auto i = static_cast<std::size_t>((c * base.height + y) * base.width + x);
        out.chw[i] = changed.chw[i];
      }
  return out;
}

TEST(Faithfulness, EachStepIsTheInputBuiltByHand) {
  std::mt19937 rng(7);
  const VitModel m = tiny_classifier(rng);
  const ImageTensor x = random_image(6, 6, rng), blurred = random_image(6, 6, rng);
  ImageTensor zeros = x;
  std::fill(zeros.chw.begin(), zeros.chw.end(), 0.0f);
  // A map whose order is known: patches 4, 0, 8, 2, 6, 1, 3, 5, 7
  const Matrix map = matrix_from_rows({{0.8f, 0.3f, 0.6f}, {0.2f, 0.9f, 0.1f}, {0.5f, 0.0f, 0.7f}});
  const std::vector<int> order{4, 0, 8, 2, 6, 1, 3, 5, 7};
  const int steps = 4, c = 2;  // n_k = 0, 3, 5, 7, 9
  const FaithfulnessCurves curves = faithfulness_curves(m, x, blurred, map, c, {steps, true});
  ASSERT_EQ(curves.deletion.size(), 5u);
  ASSERT_EQ(curves.insertion.size(), 5u);
  const std::vector<int> n_k{0, 3, 5, 7, 9};
  double del_auc = 0, ins_auc = 0;
  for (int k = 0; k <= steps; ++k) {
    const std::vector<int> top(order.begin(), order.begin() + n_k[static_cast<std::size_t>(k)]);
    const double del = probability(m, mixed(x, zeros, top, 2, 3), c);
    const double ins = probability(m, mixed(blurred, x, top, 2, 3), c);
    EXPECT_NEAR(curves.deletion[static_cast<std::size_t>(k)], del, 1e-12) << "deletion step " << k;
    EXPECT_NEAR(curves.insertion[static_cast<std::size_t>(k)], ins, 1e-12) << "insertion step " << k;
    EXPECT_DOUBLE_EQ(curves.fractions[static_cast<std::size_t>(k)], n_k[static_cast<std::size_t>(k)] / 9.0);
    if (k > 0) {
      const double dx = (n_k[static_cast<std::size_t>(k)] - n_k[static_cast<std::size_t>(k - 1)]) / 9.0;
      del_auc += dx * (del + curves.deletion[static_cast<std::size_t>(k - 1)]) / 2;
      ins_auc += dx * (ins + curves.insertion[static_cast<std::size_t>(k - 1)]) / 2;
    }
  }
  EXPECT_NEAR(curves.deletion_auc, del_auc, 1e-12);
  EXPECT_NEAR(curves.insertion_auc, ins_auc, 1e-12);
  // the curves are not flat: the test could tell a wrong order
  EXPECT_GT(std::abs(curves.deletion.front() - curves.deletion.back()), 1e-3);
  EXPECT_GT(std::abs(curves.insertion.front() - curves.insertion.back()), 1e-3);
}

TEST(Faithfulness, MoreStepsThanPatchesRepeatScores) {
  std::mt19937 rng(3);
  const VitModel m = tiny_classifier(rng);
  const ImageTensor x = random_image(6, 6, rng), blurred = random_image(6, 6, rng);
  const FaithfulnessCurves c = faithfulness_curves(m, x, blurred, random_map(3, 3), 0, {20, true});
  ASSERT_EQ(c.deletion.size(), 21u);
  EXPECT_DOUBLE_EQ(c.fractions.back(), 1.0);
  EXPECT_NEAR(c.deletion.front(), probability(m, x, 0), 1e-12);
  EXPECT_NEAR(c.insertion.back(), probability(m, x, 0), 1e-12);
  EXPECT_NEAR(c.insertion.front(), probability(m, blurred, 0), 1e-12);
}

TEST(Faithfulness, RefusesWhatDoesNotFit) {
  std::mt19937 rng(1);
  VitModel m = tiny_classifier(rng);
  const ImageTensor x = random_image(6, 6, rng);
  const Matrix map = random_map(3, 3);
  EXPECT_THROW(faithfulness_curves(m, x, x, map, 4, {4, true}), Error);                // class 4 of 4
  EXPECT_THROW(faithfulness_curves(m, x, x, map, 0, {0, true}), Error);                // no steps
  EXPECT_THROW(faithfulness_curves(m, x, x, random_map(2, 3), 0, {4, true}), Error);   // map of another grid
  m.w_head = Matrix();
  m.b_head = RowVector();
  EXPECT_NE(test::error_of([&] { faithfulness_curves(m, x, x, map, 0, {4, true}); }).find("classifier"), std::string::npos);
}

TEST(FaithfulnessCsv, Rfc4180RowsUnderTheBatchHeader) {
  const std::vector<pipeline::FaithfulnessRow> rows{{"attention", 3, 0.125, 0.5, 16}, {"random", 3, 1.0 / 3, 0.25, 16}};
  EXPECT_EQ(pipeline::faithfulness_csv("a,b \"c\".png", rows),
            "path,method,class,deletion_auc,insertion_auc,steps\n"
            "\"a,b \"\"c\"\".png\",attention,3,0.125,0.5,16\n"
            "\"a,b \"\"c\"\".png\",random,3,0.333333333,0.25,16\n");
}

}  // namespace
}  // namespace vitattn
