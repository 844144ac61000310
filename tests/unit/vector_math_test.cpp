// The vector exp and the row layers on it (vector_math.hpp): every variant this CPU runs
// against double-precision std::exp over a dense sweep of the floats, its special values;
// erf the same way; softmax rows against a double-precision softmax, masks exactly 0; the three
// GELUs against double precision; the same bytes from the AVX2 and AVX-512 variants, and from
// each variant at 1, 2 and 3 threads.
#include "core/vector_math.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/layers.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

class VectorMath : public ::testing::Test {
 protected:
  void TearDown() override {
    set_vector_isa(best_vector_isa());
    set_gemm_threads(1);
  }
};

constexpr float kInf = std::numeric_limits<float>::infinity();

// The distance of y from the exact value e in units of the last place of the float nearest e
// (the subnormals' spacing 2⁻¹⁴⁹ below FLT_MIN).
double ulps(float y, double e) {
  if (std::isinf(y) && e > static_cast<double>(std::numeric_limits<float>::max())) return 0.0;
  const float nearest = static_cast<float>(e);
  int exponent = 0;
  std::frexp(static_cast<double>(nearest == 0.0f ? std::numeric_limits<float>::denorm_min() : nearest), &exponent);
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::abs(static_cast<double>(y) - e) / ulp;
}

// Every float from −104 to 89 at a stride of bit patterns (and every one near 0), with the
// exact exp in double: the range where exp is neither 0 nor ∞, the subnormal results included.
std::vector<float> exp_sweep() {
  std::vector<float> xs;
  for (float sign : {1.0f, -1.0f}) {
    const float top = sign > 0 ? 89.0f : 104.0f;
    for (std::uint32_t bits = 0; ; bits += 97) {
      const float v = std::bit_cast<float>(bits);
      if (v > top) break;
      xs.push_back(sign * v);
    }
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> any(-104.0f, 89.0f);
  for (int i = 0; i < 1000000; ++i) xs.push_back(any(rng));
  for (float x = -88.0f; x <= -86.0f; x = std::nextafter(x, kInf)) xs.push_back(x);  // FLT_MIN's neighbourhood, every float
  return xs;
}

TEST_F(VectorMath, ExpWithinOneUlpOfTheExactValue) {
  const std::vector<float> xs = exp_sweep();
  std::vector<float> ys(xs.size());
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    exp_row(xs.data(), ys.data(), static_cast<std::ptrdiff_t>(xs.size()));
    double worst = 0.0;
    float worst_x = 0.0f;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double u = ulps(ys[i], std::exp(static_cast<double>(xs[i])));
      if (!(u <= worst)) worst = u, worst_x = xs[i];
    }
    std::cout << vector_isa_name(isa) << ": exp's worst error in the sweep " << worst << " ulp, at " << worst_x << '\n';
    EXPECT_LT(worst, 1.0) << vector_isa_name(isa) << ": exp(" << worst_x << ") is " << worst << " ulp off";
  }
}

TEST_F(VectorMath, ExpSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), big = std::numeric_limits<float>::max();
  // A length past one register so the values go through the full and the tail paths alike.
  const std::vector<float> xs = {-kInf, kInf, nan, 0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, -5e-8f, 89.0f, -104.0f,
                                 big,   -big, 88.8f, -105.0f, 1.0f, 1e-45f, -1e-45f, -kInf};
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    std::vector<float> ys(xs.size());
    exp_row(xs.data(), ys.data(), static_cast<std::ptrdiff_t>(xs.size()));
    const std::string v = vector_isa_name(isa);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(ys[0]), 0u) << v << ": exp(−∞) is exactly +0";
    EXPECT_EQ(ys[1], kInf) << v;
    EXPECT_TRUE(std::isnan(ys[2])) << v;
    for (int i : {3, 4, 5, 6, 16, 17}) EXPECT_EQ(ys[static_cast<std::size_t>(i)], 1.0f) << v << " x = " << xs[static_cast<std::size_t>(i)];
    EXPECT_EQ(ys[7], 1.0f) << v;                                   // 1 + 1e-8 rounds to 1
    EXPECT_EQ(ys[8], std::nextafter(1.0f, 0.0f)) << v;            // 1 − 5e-8 rounds to 1 − 2⁻²⁴
    EXPECT_EQ(ys[9], kInf) << v;
    EXPECT_EQ(ys[10], 0.0f) << v;
    EXPECT_EQ(ys[11], kInf) << v;
    EXPECT_EQ(ys[12], 0.0f) << v;
    EXPECT_EQ(ys[13], kInf) << v;  // over FLT_MAX (exp(88.7228))
    EXPECT_EQ(ys[14], 0.0f) << v;
    EXPECT_NEAR(ys[15], 2.7182817f, 2.5e-7f) << v;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(ys[18]), 0u) << v;
  }
}

// erf over [−5, 5] (every 41st bit pattern, and evenly spaced values), against erf in double.
TEST_F(VectorMath, ErfWithinTwoUlpOfTheExactValue) {
  std::vector<float> xs;
  for (std::uint32_t bits = 0;; bits += 41) {
    const float v = std::bit_cast<float>(bits);
    if (v > 5.0f) break;
    xs.push_back(v);
    xs.push_back(-v);
  }
  for (int i = -500000; i <= 500000; ++i) xs.push_back(static_cast<float>(i) * 1e-5f);
  std::vector<float> ys(xs.size());
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    erf_row(xs.data(), ys.data(), static_cast<std::ptrdiff_t>(xs.size()));
    double worst = 0.0;
    float worst_x = 0.0f;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double u = ulps(ys[i], std::erf(static_cast<double>(xs[i])));
      if (!(u <= worst)) worst = u, worst_x = xs[i];
    }
    std::cout << vector_isa_name(isa) << ": erf's worst error in the sweep " << worst << " ulp, at " << worst_x << '\n';
    if (isa != VectorIsa::portable) {
      EXPECT_LE(worst, 2.0) << vector_isa_name(isa) << ": erf(" << worst_x << ")";
    }
  }
}

TEST_F(VectorMath, ErfSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {-kInf, kInf, nan, 0.0f, -0.0f, 1e-30f, -1e-30f, 4.0f, -4.0f, 100.0f, -100.0f, 0.875f, -0.875f,
                                 3.93f, 1e-45f, 0.5f, -2.0f};
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    std::vector<float> ys(xs.size());
    erf_row(xs.data(), ys.data(), static_cast<std::ptrdiff_t>(xs.size()));
    const std::string v = vector_isa_name(isa);
    EXPECT_EQ(ys[0], -1.0f) << v;
    EXPECT_EQ(ys[1], 1.0f) << v;
    EXPECT_TRUE(std::isnan(ys[2])) << v;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(ys[3]), 0u) << v << ": erf(+0) = +0";
    EXPECT_EQ(std::bit_cast<std::uint32_t>(ys[4]), 0x80000000u) << v << ": erf(−0) = −0";
    for (std::size_t i = 5; i < xs.size(); ++i)
      EXPECT_LE(ulps(ys[i], std::erf(static_cast<double>(xs[i]))), 2.0) << v << " x = " << xs[i];
  }
}

// softmax in double, the row maximum subtracted; −∞ entries 0.
std::vector<double> softmax_double(const float* row, int n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(row[j]));
  std::vector<double> p(static_cast<std::size_t>(n));
  double sum = 0.0;
  for (int j = 0; j < n; ++j) sum += p[static_cast<std::size_t>(j)] = std::exp(static_cast<double>(row[j]) - mx);
  for (double& v : p) v /= sum;
  return p;
}

// Rows of every length from 1 to 40 (all tails of both register widths) and the forward's 197
// and 257, scores spread as attention's are, some entries masked.
Matrix score_rows(int n, std::mt19937& rng, bool masked) {
  Matrix s = test::random_matrix(13, n, rng, 4.0f);
  if (masked)
    for (Eigen::Index i = 0; i < s.rows(); ++i)
      for (Eigen::Index j = 0; j < n; ++j)
        if ((i * 7 + j * 3) % 5 == 0 && j != i % n) s(i, j) = kMasked;
  return s;
}

TEST_F(VectorMath, SoftmaxRowsAgainstDoublePrecision) {
  std::vector<int> lengths;
  for (int n = 1; n <= 40; ++n) lengths.push_back(n);
  lengths.insert(lengths.end(), {197, 257});
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    for (bool masked : {false, true})
      for (int n : lengths) {
        std::mt19937 rng(static_cast<unsigned>(n));
        Matrix s = score_rows(n, rng, masked);
        const Matrix before = s;
        softmax_rows(s);
        for (Eigen::Index i = 0; i < s.rows(); ++i) {
          const std::vector<double> p = softmax_double(before.row(i).data(), n);
          double sum = 0.0;
          for (Eigen::Index j = 0; j < n; ++j) {
            sum += static_cast<double>(s(i, j));
            if (before(i, j) == kMasked) {
              EXPECT_EQ(std::bit_cast<std::uint32_t>(s(i, j)), 0u) << vector_isa_name(isa) << ": a masked entry is exactly +0";
            } else {
              EXPECT_NEAR(s(i, j), p[static_cast<std::size_t>(j)], 1e-6 * p[static_cast<std::size_t>(j)] + 1e-30)
                  << vector_isa_name(isa) << " n = " << n << " row " << i << " column " << j;
            }
          }
          EXPECT_NEAR(sum, 1.0, 1e-6) << vector_isa_name(isa) << " n = " << n << " row " << i;
        }
      }
  }
}

TEST_F(VectorMath, FullyMaskedRowBecomesZeros) {
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    for (int n : {1, 5, 16, 17, 197}) {
      Matrix s = Matrix::Constant(3, n, kMasked);
      s(1, n - 1) = 2.5f;  // one entry left: exactly 1
      softmax_rows(s);
      for (Eigen::Index j = 0; j < n; ++j) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(s(0, j)), 0u) << vector_isa_name(isa) << " n = " << n;
        EXPECT_EQ(s(1, j), j == n - 1 ? 1.0f : 0.0f) << vector_isa_name(isa) << " n = " << n;
      }
    }
  }
}

TEST_F(VectorMath, QuickGeluAgainstDoublePrecision) {
  std::mt19937 rng(11);
  Matrix x = test::random_matrix(7, 333, rng, 6.0f);
  x(0, 0) = 0.0f, x(0, 1) = -60.0f, x(0, 2) = 60.0f, x(0, 3) = 1e-20f;
  const Matrix before = x;
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    Matrix y = before;
    gelu_inplace(y, Gelu::quick);
    for (Eigen::Index i = 0; i < y.rows(); ++i)
      for (Eigen::Index j = 0; j < y.cols(); ++j) {
        // −1.702·x rounded to float first, as the code does (and CLIP's x * 1.702 in float)
        const double t = static_cast<double>(-1.702f * before(i, j));
        const double want = static_cast<double>(before(i, j)) / (1.0 + std::exp(t));
        EXPECT_NEAR(y(i, j), want, 4e-7 * std::abs(want) + 1e-38) << vector_isa_name(isa) << " x = " << before(i, j);
      }
  }
}

// GELU's tanh form against its value in double, y as the code rounds it in float. The
// vector variants (x·σ(2y)) are held to a few ulp of the value; the portable one, which keeps
// the float form's cancellation in 1 + tanh(y) for y < 0, to a few ulp of ½|x| there.
TEST_F(VectorMath, TanhGeluAgainstDoublePrecision) {
  std::mt19937 rng(12);
  Matrix x = test::random_matrix(7, 333, rng, 6.0f);
  x(0, 0) = 0.0f, x(0, 1) = -30.0f, x(0, 2) = 30.0f, x(0, 3) = 1e-20f, x(0, 4) = -1e-20f, x(0, 5) = -9.0f;
  const Matrix before = x;
  const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    Matrix g = before;
    gelu_inplace(g, Gelu::tanh);
    const double absolute = isa == VectorIsa::portable ? 2.4e-7 : 0.0;
    for (Eigen::Index i = 0; i < g.rows(); ++i)
      for (Eigen::Index j = 0; j < g.cols(); ++j) {
        const float v = before(i, j), y = k * (v + 0.044715f * (v * v * v));
        // ½x(1 + tanh(y)) = x / (1 + exp(−2y)): the second, in double, without the first's
        // cancellation for y < 0, which even double precision does not survive at y = −12
        const double want = static_cast<double>(v) / (1.0 + std::exp(-2.0 * static_cast<double>(y)));
        EXPECT_NEAR(g(i, j), want, 4e-7 * std::abs(want) + absolute * std::abs(static_cast<double>(v)) + 1e-38)
            << vector_isa_name(isa) << " x = " << v;
      }
  }
}

// GELU's erf form against ½x·erfc(−z) in double (= ½x(1 + erf(z)) without its cancellation),
// z = x/√2 as the code rounds it in float. Past z = −3.93 the vector variants give 0, as a
// float erf of −1 does: at most ½|x|·erfc(3.93) off.
TEST_F(VectorMath, ErfGeluAgainstDoublePrecision) {
  std::mt19937 rng(13);
  Matrix x = test::random_matrix(7, 333, rng, 7.0f);
  x(0, 0) = 0.0f, x(0, 1) = -30.0f, x(0, 2) = 30.0f, x(0, 3) = 1e-20f, x(0, 4) = -1e-20f, x(0, 5) = -5.5f;
  x(0, 6) = -1.2374369f, x(0, 7) = 1.2374369f;  // z at the pieces' seam
  const Matrix before = x;
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    Matrix g = before;
    gelu_inplace(g, Gelu::erf);
    const double absolute = isa == VectorIsa::portable ? 2.4e-7 : 2e-8;
    for (Eigen::Index i = 0; i < g.rows(); ++i)
      for (Eigen::Index j = 0; j < g.cols(); ++j) {
        const float v = before(i, j), z = v * static_cast<float>(M_SQRT1_2);
        const double want = 0.5 * static_cast<double>(v) * std::erfc(-static_cast<double>(z));
        EXPECT_NEAR(g(i, j), want, 4e-7 * std::abs(want) + absolute * std::abs(static_cast<double>(v)) + 1e-38)
            << vector_isa_name(isa) << " x = " << v;
      }
  }
}

bool same_bits(const Matrix& x, const Matrix& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<std::size_t>(x.size())) == 0;
}

// A head's worth of scores (197 rows) six times over: enough rows to be split over threads.
Matrix many_scores(std::mt19937& rng) { return test::random_matrix(6 * 197, 197, rng, 4.0f); }

TEST_F(VectorMath, EachVariantGivesTheSameBytesAtAnyThreadCount) {
  std::mt19937 rng(3);
  const Matrix scores = many_scores(rng), hidden = test::random_matrix(197, 1536, rng, 3.0f);
  for (VectorIsa isa : available_vector_isas()) {
    set_vector_isa(isa);
    Matrix p1, g1, t1, e1;
    for (int threads : {1, 2, 3}) {
      set_gemm_threads(threads);
      Matrix p = scores, g = hidden, t = hidden, e = hidden;
      softmax_rows(p);
      gelu_inplace(g, Gelu::quick);
      gelu_inplace(t, Gelu::tanh);
      gelu_inplace(e, Gelu::erf);
      if (threads == 1) {
        p1 = p, g1 = g, t1 = t, e1 = e;
        continue;
      }
      EXPECT_TRUE(same_bits(p, p1)) << vector_isa_name(isa) << ": softmax at " << threads << " threads";
      EXPECT_TRUE(same_bits(g, g1)) << vector_isa_name(isa) << ": quick-GELU at " << threads << " threads";
      EXPECT_TRUE(same_bits(t, t1)) << vector_isa_name(isa) << ": tanh GELU at " << threads << " threads";
      EXPECT_TRUE(same_bits(e, e1)) << vector_isa_name(isa) << ": erf GELU at " << threads << " threads";
    }
  }
}

// The two vector variants do the same operations lane by lane and sum a row in the same
// order: their bytes agree, so an AVX2 machine and an AVX-512 one give the same maps.
TEST_F(VectorMath, Avx2AndAvx512GiveTheSameBytes) {
  const std::vector<VectorIsa> isas = available_vector_isas();
  if (std::find(isas.begin(), isas.end(), VectorIsa::avx512) == isas.end()) GTEST_SKIP() << "no AVX-512 here";
  std::mt19937 rng(4);
  Matrix scores = many_scores(rng);
  for (Eigen::Index j = 0; j < scores.cols(); j += 5) scores(j, j) = kMasked;
  const std::vector<float> xs = exp_sweep();
  Matrix p[2], g[2], t[2], r[2];
  std::vector<float> e[2];
  int k = 0;
  for (VectorIsa isa : {VectorIsa::avx2_fma, VectorIsa::avx512}) {
    set_vector_isa(isa);
    p[k] = scores;
    softmax_rows(p[k]);
    g[k] = scores;
    gelu_inplace(g[k], Gelu::quick);
    t[k] = scores;
    gelu_inplace(t[k], Gelu::tanh);
    r[k] = scores;
    gelu_inplace(r[k], Gelu::erf);
    e[k].resize(xs.size());
    exp_row(xs.data(), e[k].data(), static_cast<std::ptrdiff_t>(xs.size()));
    ++k;
  }
  EXPECT_TRUE(same_bits(p[0], p[1])) << "softmax";
  EXPECT_TRUE(same_bits(g[0], g[1])) << "quick-GELU";
  EXPECT_TRUE(same_bits(t[0], t[1])) << "tanh GELU";
  EXPECT_TRUE(same_bits(r[0], r[1])) << "erf GELU";
  EXPECT_EQ(std::memcmp(e[0].data(), e[1].data(), sizeof(float) * xs.size()), 0) << "exp";
}

TEST_F(VectorMath, ForcingAVariantThisCpuLacksIsAnError) {
  for (VectorIsa isa : {VectorIsa::avx2_fma, VectorIsa::avx512}) {
    const std::vector<VectorIsa> isas = available_vector_isas();
    if (std::find(isas.begin(), isas.end(), isa) == isas.end()) {
      EXPECT_THROW(set_vector_isa(isa), Error);
    }
  }
  EXPECT_EQ(available_vector_isas().front(), VectorIsa::portable);
  EXPECT_EQ(vector_isa(), best_vector_isa());
}

}  // namespace
}  // namespace vitattn
