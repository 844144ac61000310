// The bf16 weight products (gemm_bf16.hpp): the rounding against an independent nearest-even
// rounding to 8 significant bits; the product bit for bit against the chain the header states,
// emulated one scalar at a time (std::fma on the bf16-rounded values: their product is exact in
// float, so fma is the add rounded once), and within the float chain's error bound of a sum in
// double; the same bytes at 1, 2 and 3 threads and whether the weight's panels are kept or not;
// the refusal a CPU without AVX512-BF16 gets.
#include "core/gemm_bf16.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/gemm_kernels_bf16.hpp"
#include "cli/precision_option.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

bool cpu_has_bf16() { return cpu_runs(Precision::bf16); }

// Restores what a test changed.
class GemmBf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  }
  void TearDown() override {
    gemm_detail::hide_cpu_bf16(false);
    set_gemm_precision(Precision::fp32);
    set_gemm_threads(1);
  }
};

// x rounded to 8 significant bits, to nearest, ties to even (the default rounding mode of
// nearbyint), a subnormal to a zero of its sign: arithmetic, not bit manipulation.
float round_bf16(float x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  if (x == 0.0f || std::fpclassify(x) == FP_SUBNORMAL) return std::copysign(0.0f, x);
  int e = 0;
  std::frexp(x, &e);                            // |x| = f·2^e, f in [0.5, 1)
  const double ulp = std::ldexp(1.0, e - 8);    // f·2^8 in [128, 256): 8 bits
  return static_cast<float>(std::nearbyint(static_cast<double>(x) / ulp) * ulp);
}

float from_bf16(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

using test::random_normal_matrix;

// The header's chain: c_ij ← c_ij + bf16(α·a_ip)·bf16(w_jp) for p ascending, each step rounded
// once (fma: the product is exact), from c's value or 0; an odd k ends with + 0.
Matrix emulated_chain(const Matrix& c0, const Matrix& a, const Matrix& w, float alpha, bool accumulate) {
  Matrix c(a.rows(), w.rows());
  for (Eigen::Index i = 0; i < c.rows(); ++i)
    for (Eigen::Index j = 0; j < c.cols(); ++j) {
      float s = accumulate ? c0(i, j) : 0.0f;
      for (Eigen::Index p = 0; p < a.cols(); ++p) s = std::fma(round_bf16(alpha * a(i, p)), round_bf16(w(j, p)), s);
      if (a.cols() % 2 == 1) s += 0.0f;
      c(i, j) = s;
    }
  return c;
}

Matrix bf16_product(const Matrix& c0, const Matrix& a, const WeightMatrix& w, float alpha, bool accumulate) {
  Matrix c = accumulate ? c0 : Matrix::Constant(a.rows(), w.rows(), std::nanf(""));  // replaced: NaN must not stay
  gemm_abt(c, a, w, alpha, accumulate ? Accumulate::yes : Accumulate::no);
  return c;
}

bool same_bytes(const Matrix& x, const Matrix& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols()) return false;
  // An empty matrix has no data pointer, and memcmp's arguments must never be null.
  return x.size() == 0 || std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0;
}

struct Shape {
  Eigen::Index m, n, k;
};
// Single elements, empty sides, odd k, tails that fill no register tile, k across several
// chunks (256) with a tail, C across tiles (96 × 256), and a ViT's own shapes.
const std::vector<Shape> kShapes = {{1, 1, 1},     {0, 5, 3},     {5, 0, 3},      {4, 5, 0},      {13, 37, 5},
                                    {7, 3, 300},   {25, 33, 1001}, {197, 64, 197}, {97, 259, 513}, {130, 70, 20},
                                    {197, 576, 192}};

TEST(Bf16Rounding, NearestEvenAsArithmeticSays) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::vector<float> values = {1.0f, -1.0f, 0.0f, -0.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -(1.0f + 0x1p-8f),
                               0x1p-126f, 0x1p-127f, -0x1p-140f, 3.14159265f, 65504.0f};
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t u = bits(rng);
    if (i % 2 == 0) u = (u & 0xffff'0000u) | 0x8000u;  // an exact tie between two bf16 values
    const float x = std::bit_cast<float>(u);
    if (std::isfinite(x) && std::fabs(x) < 0x1p127f) values.push_back(x);
  }
  int wrong = 0;
  for (float x : values) {
    const float got = from_bf16(gemm_detail::to_bf16(x)), want = round_bf16(x);
    if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want) && ++wrong <= 5)
      ADD_FAILURE() << std::hexfloat << x << " → " << got << ", nearest even is " << want;
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_TRUE(std::isnan(from_bf16(gemm_detail::to_bf16(std::nanf("")))));
  EXPECT_EQ(from_bf16(gemm_detail::to_bf16(std::numeric_limits<float>::max())), INFINITY);
}

TEST_F(GemmBf16Test, MatchesTheStatedChainBitForBit) {
  set_gemm_precision(Precision::bf16);
  std::uint32_t seed = 1;
  for (const Shape& s : kShapes)
    for (bool accumulate : {false, true})
      for (float alpha : {1.0f, 0.37f}) {
        Matrix a = random_normal_matrix(s.m, s.k, seed++);
        const Matrix w_values = random_normal_matrix(s.n, s.k, seed++);
        for (Eigen::Index p = 0; p < std::min<Eigen::Index>(a.size(), 64); p += 3)  // ties and subnormals too
          a.data()[p] = p % 2 == 0 ? 1.0f + 0x1p-8f + static_cast<float>(p) * 0x1p-7f : 0x1p-130f * static_cast<float>(p + 1);
        const Matrix c0 = random_normal_matrix(s.m, s.n, seed++);
        const WeightMatrix w = w_values;
        const Matrix want = emulated_chain(c0, a, w_values, alpha, accumulate);
        for (int use = 0; use < 3; ++use)  // packed per product, then kept with the weight
          EXPECT_TRUE(same_bytes(bf16_product(c0, a, w, alpha, accumulate), want))
              << s.m << "×" << s.n << "×" << s.k << " accumulate " << accumulate << " α " << alpha << " use " << use;
      }
}

// Against the exact sum of the bf16-rounded terms (in double, exact here at these sizes up
// to its own rounding): a float chain of k adds is within k·u·Σ|terms| of it (u = 2⁻²⁴,
// first order; the bound is loose by design, the bit-exact test above is the sharp one).
TEST_F(GemmBf16Test, WithinTheChainsBoundOfADoubleSum) {
  set_gemm_precision(Precision::bf16);
  const Matrix a2 = random_normal_matrix(50, 3001, 13), w2 = random_normal_matrix(70, 3001, 14),
               c0 = random_normal_matrix(50, 70, 15);
  const Matrix c = bf16_product(c0, a2, WeightMatrix(w2), 1.0f, true);
  double worst = 0.0;
  for (Eigen::Index i = 0; i < c.rows(); ++i)
    for (Eigen::Index j = 0; j < c.cols(); ++j) {
      double sum = static_cast<double>(c0(i, j)), magnitude = std::fabs(sum);
      for (Eigen::Index p = 0; p < a2.cols(); ++p) {
        const double term = static_cast<double>(round_bf16(a2(i, p))) * static_cast<double>(round_bf16(w2(j, p)));
        sum += term;
        magnitude += std::fabs(term);
      }
      const double bound = static_cast<double>(a2.cols() + 1) * 0x1p-24 * magnitude;
      const double error = std::fabs(static_cast<double>(c(i, j)) - sum);
      EXPECT_LE(error, bound) << i << ", " << j;
      worst = std::max(worst, error / bound);
    }
  EXPECT_GT(worst, 0.0);  // the comparison saw rounding at all
}

TEST_F(GemmBf16Test, SameBytesAtEveryThreadCount) {
  set_gemm_precision(Precision::bf16);
  for (const Shape& s : {Shape{197, 2304, 768}, Shape{197, 768, 3072}, Shape{300, 300, 301}}) {
    const Matrix a = random_normal_matrix(s.m, s.k, 21), w_values = random_normal_matrix(s.n, s.k, 22),
                 c0 = random_normal_matrix(s.m, s.n, 23);
    Matrix first;
    for (int threads : {1, 2, 3}) {
      const WeightMatrix w = w_values;  // a fresh weight: packed per product first, then kept
      set_gemm_threads(threads);
      for (int use = 0; use < 3; ++use) {
        const Matrix c = bf16_product(c0, a, w, 1.0f, true);
        if (first.size() == 0) first = c;
        EXPECT_TRUE(same_bytes(c, first)) << s.m << "×" << s.n << "×" << s.k << " threads " << threads << " use " << use;
      }
    }
  }
}

// Only x·Wᵀ with a weight changes: a view's product and the gradient's d·W stay float32.
TEST_F(GemmBf16Test, OnlyTheWeightProductsOfTheForward) {
  const Matrix a = random_normal_matrix(30, 40, 31), b = random_normal_matrix(50, 40, 32),
               d = random_normal_matrix(30, 50, 33);
  const WeightMatrix w = b;
  Matrix view_fp32(30, 50), grad_fp32(30, 40), weight_fp32(30, 50);
  gemm_abt(view_fp32, a, b);
  gemm_ab(grad_fp32, d, w);
  gemm_abt(weight_fp32, a, w);
  set_gemm_precision(Precision::bf16);
  EXPECT_EQ(gemm_precision(), Precision::bf16);
  Matrix view_bf16(30, 50), grad_bf16(30, 40), weight_bf16(30, 50);
  gemm_abt(view_bf16, a, b);
  gemm_ab(grad_bf16, d, w);
  gemm_abt(weight_bf16, a, w);
  EXPECT_TRUE(same_bytes(view_bf16, view_fp32));
  EXPECT_TRUE(same_bytes(grad_bf16, grad_fp32));
  EXPECT_FALSE(same_bytes(weight_bf16, weight_fp32));
  EXPECT_TRUE(same_bytes(weight_bf16, emulated_chain(Matrix(), a, b, 1.0f, false)));
}

// Inside KeepFloat32 a weight product is fp32's, bytes and all; scopes nest, and leaving the last
// one gives bf16 back (the forward keeps its patch embedding and attention branch this way).
TEST_F(GemmBf16Test, KeepFloat32KeepsThisThreadsWeightProductsInFloat32) {
  const Matrix a = random_normal_matrix(30, 40, 41), b = random_normal_matrix(50, 40, 42);
  const WeightMatrix w = b;
  Matrix fp32(30, 50), kept(30, 50), nested(30, 50), after(30, 50);
  gemm_abt(fp32, a, w);
  set_gemm_precision(Precision::bf16);
  {
    const KeepFloat32 outer;
    {
      const KeepFloat32 inner;
      gemm_abt(nested, a, w);
    }
    EXPECT_EQ(weight_product_precision(), Precision::fp32);
    gemm_abt(kept, a, w);
  }
  EXPECT_EQ(weight_product_precision(), Precision::bf16);
  gemm_abt(after, a, w);
  EXPECT_TRUE(same_bytes(nested, fp32));
  EXPECT_TRUE(same_bytes(kept, fp32));
  EXPECT_TRUE(same_bytes(after, emulated_chain(Matrix(), a, b, 1.0f, false)));
}

// A CPU without the instructions: the setting is refused in one sentence, the precision stays
// fp32, and a product asked for bf16 anyway throws instead of running an illegal instruction.
TEST(GemmBf16Refusal, ACpuWithoutAvx512Bf16IsRefused) {
  const bool had = cpu_runs(Precision::bf16);
  gemm_detail::hide_cpu_bf16(true);
  EXPECT_FALSE(cpu_runs(Precision::bf16));
  EXPECT_TRUE(cpu_runs(Precision::fp32));
  try {
    set_gemm_precision(Precision::bf16);
    ADD_FAILURE() << "bf16 accepted on a CPU without AVX512-BF16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("AVX512-BF16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gemm_precision(), Precision::fp32);
  Matrix c(2, 2);
  EXPECT_THROW(gemm_abt_weight_bf16(c, Matrix::Ones(2, 3), WeightMatrix(Matrix::Ones(2, 3)), 1.0f, Accumulate::no), Error);
  EXPECT_NO_THROW(set_gemm_precision(Precision::fp32));
  gemm_detail::hide_cpu_bf16(false);
  EXPECT_EQ(cpu_runs(Precision::bf16), had);
}

// The command line's side of it: one sentence that names the flag and what to use instead.
TEST(GemmBf16Refusal, TheCommandLineNamesTheFlag) {
  gemm_detail::hide_cpu_bf16(true);
  try {
    cli::use_precision(Precision::bf16);
    ADD_FAILURE() << "--precision bf16 accepted on a CPU without AVX512-BF16";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("--precision bf16: ", 0), 0u) << message;
    EXPECT_NE(message.find("AVX512-BF16"), std::string::npos) << message;
    EXPECT_NE(message.find("--precision fp32"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_EQ(gemm_precision(), Precision::fp32);
  EXPECT_NO_THROW(cli::use_precision(Precision::fp32));
  gemm_detail::hide_cpu_bf16(false);
}

}  // namespace
}  // namespace vitattn
