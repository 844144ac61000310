// RoPE (core/rope.hpp) on hand-made inputs: the periods' formula, the coordinates of a small
// grid, the property that makes it a relative position code (q·k after rotation depends on the
// two patches' offset only), the leading tokens left alone; and a RoPE model's validation.
#include "core/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "core/vit.hpp"

namespace vitattn {
namespace {

TEST(Rope, PeriodsAreBaseToTheFourKOverDHead) {
  const RowVector p = rope_periods(100.0, 16);  // (4)
  ASSERT_EQ(p.size(), 4);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(static_cast<double>(p[k]), std::pow(100.0, k / 4.0), 1e-4 * std::pow(100.0, k / 4.0));
}

TEST(Rope, TableHoldsTheRowThenTheColumnAnglesOfPatchCentres) {
  const Rope rope{rope_periods(100.0, 8)};  // periods 1, 10
  const RopeTable t = rope_table(rope, 2, 4);  // (8, 4)
  ASSERT_EQ(t.cos.rows(), 8);
  ASSERT_EQ(t.cos.cols(), 4);
  // patch (1, 2): y = 2·1.5/2 − 1 = 0.5, x = 2·2.5/4 − 1 = 0.25; row 1·4 + 2 = 6
  const double pi2 = 2 * std::numbers::pi;
  EXPECT_NEAR(t.sin(6, 0), std::sin(pi2 * 0.5 / 1.0), 1e-6);
  EXPECT_NEAR(t.sin(6, 1), std::sin(pi2 * 0.5 / 10.0), 1e-6);
  EXPECT_NEAR(t.cos(6, 2), std::cos(pi2 * 0.25 / 1.0), 1e-6);
  EXPECT_NEAR(t.cos(6, 3), std::cos(pi2 * 0.25 / 10.0), 1e-6);
}

TEST(Rope, DotProductDependsOnTheOffsetOnlyAndLeadingRowsStay) {
  const Rope rope{rope_periods(7.0, 8)};
  const RopeTable t = rope_table(rope, 1, 5);  // one row of five patches, x = −0.8 … 0.8
  const RowVector q0 = (RowVector(8) << 0.3f, -1.2f, 0.7f, 0.1f, 0.9f, -0.4f, 0.2f, 1.1f).finished();
  const RowVector k0 = (RowVector(8) << -0.5f, 0.6f, 0.8f, -0.3f, 0.1f, 0.4f, -1.0f, 0.2f).finished();
  Matrix q(6, 8), k(6, 8);  // (1 leading + 5 patches, d_head)
  q.rowwise() = q0;
  k.rowwise() = k0;
  apply_rope(q, 1, t);
  apply_rope(k, 1, t);
  EXPECT_EQ(q.row(0), q0);  // the leading token is not rotated
  EXPECT_NEAR(q.row(3).norm(), q0.norm(), 1e-5);  // a rotation
  // patches 0→1 and 2→3 are one step apart: the same score; 0→2 is another
  const float a = q.row(1).dot(k.row(2)), b = q.row(3).dot(k.row(4)), c = q.row(1).dot(k.row(3));
  EXPECT_NEAR(a, b, 1e-5);
  EXPECT_GT(std::abs(a - c), 1e-3);
}

TEST(Rope, ValidateWantsAQuarterHeadOfPeriodsAndNoTable) {
  VitModel m;
  m.patch_size = 2;
  m.n_heads = 2;
  m.w_patch = Matrix::Zero(8, 12);
  m.cls_token = RowVector::Zero(8);
  m.pos_prefix = 0;
  m.grid_h = m.grid_w = 3;
  EncoderBlock b;
  b.w_qkv = Matrix::Zero(24, 8);
  b.w_proj = Matrix::Zero(8, 8);
  m.blocks.push_back(b);
  m.rope.periods = rope_periods(100.0, 4);  // d_head 4: one period
  EXPECT_NO_THROW(m.validate("m"));
  m.rope.periods = rope_periods(100.0, 8);  // two: wrong for heads of 4
  try {
    m.validate("m");
    FAIL() << "two periods for heads of 4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RoPE periods are [2], expected [d_head/4] = [1]"), std::string::npos) << e.what();
  }
  m.rope.periods = rope_periods(100.0, 4);
  m.pos_embed = Matrix::Zero(9, 8);
  EXPECT_THROW(m.validate("m"), Error);  // a table besides RoPE
}

}  // namespace
}  // namespace vitattn
