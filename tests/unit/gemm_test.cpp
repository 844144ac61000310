// The products behind the forward (gemm.hpp): every kernel this CPU runs against a naive
// double-precision loop; every FMA kernel bit for bit against a scalar std::fma chain (the
// construction that makes the bytes independent of tiling, threads and vector width); the
// same bytes for every thread count and across kernels.
#include "core/gemm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

// Restores the kernel and thread count a test changed.
class GemmTest : public ::testing::Test {
 protected:
  void TearDown() override {
    set_gemm_kernel(best_gemm_kernel());
    set_gemm_threads(1);
  }
};

struct Shape {
  Eigen::Index m, n, k;
};

// Awkward on purpose: single elements, empty sides, tails that fill no register tile, k
// across several depth chunks (256) with a tail, and the forward's own shapes.
const std::vector<Shape> kShapes = {{1, 1, 1},    {0, 5, 3},     {5, 0, 3},     {4, 5, 0},     {13, 37, 5},
                                    {7, 3, 300},  {25, 33, 1000}, {197, 197, 64}, {197, 64, 197}, {97, 259, 513},
                                    {130, 70, 20}};

using test::random_normal_matrix;

bool is_fma_kernel(GemmKernel k) { return k != GemmKernel::portable; }

// The FMA kernels this CPU runs: every one but the portable kernel. A test of them skips when
// there is none, with this reason.
std::vector<GemmKernel> fma_kernels() {
  std::vector<GemmKernel> kernels;
  for (GemmKernel k : available_gemm_kernels())
    if (is_fma_kernel(k)) kernels.push_back(k);
  return kernels;
}
constexpr const char* kNoFma = "this CPU has no FMA: only the portable kernel runs";

// b_kn(p, j) of the product, whichever way b is stored.
float at(const Matrix& b, bool transposed, Eigen::Index p, Eigen::Index j) { return transposed ? b(j, p) : b(p, j); }

// The construction itself, one scalar at a time: c_ij ← fma(α·a_ip, b_pj, c_ij) for p ascending,
// from c's value (accumulate) or from 0.
Matrix fma_chain(const Matrix& c0, const Matrix& a, const Matrix& b, bool transposed, float alpha, bool accumulate) {
  const Eigen::Index n = transposed ? b.rows() : b.cols();
  Matrix c(a.rows(), n);
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < n; ++j) {
      float acc = accumulate ? c0(i, j) : 0.0f;
      for (Eigen::Index p = 0; p < a.cols(); ++p) acc = std::fma(alpha * a(i, p), at(b, transposed, p, j), acc);
      c(i, j) = acc;
    }
  return c;
}

// The exact value in double, and Σ|terms| for the error bound.
void naive(const Matrix& c0, const Matrix& a, const Matrix& b, bool transposed, float alpha, bool accumulate,
           Eigen::MatrixXd& exact, Eigen::MatrixXd& magnitude) {
  const Eigen::Index n = transposed ? b.rows() : b.cols();
  exact.resize(a.rows(), n);
  magnitude.resize(a.rows(), n);
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < n; ++j) {
      double s = accumulate ? static_cast<double>(c0(i, j)) : 0.0, mag = std::abs(s);
      for (Eigen::Index p = 0; p < a.cols(); ++p) {
        const double t = double{alpha} * static_cast<double>(a(i, p)) * static_cast<double>(at(b, transposed, p, j));
        s += t;
        mag += std::abs(t);
      }
      exact(i, j) = s;
      magnitude(i, j) = mag;
    }
}

// c [+]= α·a·op(b) through gemm, from c0 (accumulate) or from a c full of NaN (it must not be read).
Matrix product(const Matrix& c0, const Matrix& a, const Matrix& b, bool transposed, float alpha, bool accumulate) {
  const Eigen::Index n = transposed ? b.rows() : b.cols();
  Matrix c = c0;
  if (!accumulate) c = Matrix::Constant(a.rows(), n, std::numeric_limits<float>::quiet_NaN());
  const Accumulate acc = accumulate ? Accumulate::yes : Accumulate::no;
  if (transposed) gemm_abt(c, a, b, alpha, acc);
  else gemm_ab(c, a, b, alpha, acc);
  return c;
}

// The same through a model's weight (a WeightMatrix: its panels packed once and kept).
Matrix product(const Matrix& c0, const Matrix& a, const WeightMatrix& w, bool transposed, float alpha, bool accumulate) {
  const Eigen::Index n = transposed ? w.rows() : w.cols();
  Matrix c = c0;
  if (!accumulate) c = Matrix::Constant(a.rows(), n, std::numeric_limits<float>::quiet_NaN());
  const Accumulate acc = accumulate ? Accumulate::yes : Accumulate::no;
  if (transposed) gemm_abt(c, a, w, alpha, acc);
  else gemm_ab(c, a, w, alpha, acc);
  return c;
}

bool same_bits(const Matrix& x, const Matrix& y) {
  // An empty matrix has a null data pointer, which memcmp must not be given even for 0 bytes.
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         (x.size() == 0 || std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0);
}

std::string label(GemmKernel k, const Shape& s, bool transposed, float alpha, bool accumulate) {
  return gemm_kernel_name(k) + (transposed ? " a·bᵀ " : " a·b ") + std::to_string(s.m) + "×" + std::to_string(s.n) +
         "×" + std::to_string(s.k) + " α=" + std::to_string(alpha) + (accumulate ? " accumulate" : "");
}

// Every case: both forms, α = 1 and an inexact α (1/√48), with and without accumulation.
template <typename Check>
void for_each_case(Check check) {
  std::uint32_t seed = 1;
  for (const Shape& s : kShapes)
    for (bool transposed : {true, false})
      for (float alpha : {1.0f, 1.0f / std::sqrt(48.0f)})
        for (bool accumulate : {false, true}) {
          const Matrix a = random_normal_matrix(s.m, s.k, seed++);
          const Matrix b = transposed ? random_normal_matrix(s.n, s.k, seed++) : random_normal_matrix(s.k, s.n, seed++);
          const Matrix c0 = random_normal_matrix(s.m, s.n, seed++);
          check(s, a, b, c0, transposed, alpha, accumulate);
        }
}

TEST_F(GemmTest, ThisCpuHasThePortableKernelAndPicksTheWidestByDefault) {
  const std::vector<GemmKernel> kernels = available_gemm_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.front(), GemmKernel::portable);
  EXPECT_EQ(kernels.back(), best_gemm_kernel());
  EXPECT_EQ(gemm_kernel(), best_gemm_kernel());
  std::cout << "kernels on this CPU:";
  for (GemmKernel k : kernels) std::cout << " " << gemm_kernel_name(k);
  std::cout << "\n";
}

TEST_F(GemmTest, EveryKernelMatchesANaiveDoubleLoop) {
  for (GemmKernel kernel : available_gemm_kernels()) {
    set_gemm_kernel(kernel);
    for_each_case([&](const Shape& s, const Matrix& a, const Matrix& b, const Matrix& c0, bool transposed, float alpha,
                      bool accumulate) {
      const Matrix c = product(c0, a, b, transposed, alpha, accumulate);
      Eigen::MatrixXd exact, magnitude;
      naive(c0, a, b, transposed, alpha, accumulate, exact, magnitude);
      ASSERT_EQ(c.rows(), s.m);
      ASSERT_EQ(c.cols(), s.n);
      // A float chain of k + 1 terms: at most (k + 2)·u·Σ|terms| off, u = 2⁻²⁴ (plus α's rounding).
      const double u = std::ldexp(1.0, -24);
      for (Eigen::Index i = 0; i < s.m; ++i)
        for (Eigen::Index j = 0; j < s.n; ++j) {
          const double bound = (static_cast<double>(s.k) + 3) * u * magnitude(i, j) + 1e-30;
          ASSERT_LE(std::abs(static_cast<double>(c(i, j)) - exact(i, j)), bound)
              << label(kernel, s, transposed, alpha, accumulate) << " at (" << i << ", " << j << ")";
        }
    });
  }
}

TEST_F(GemmTest, EveryFmaKernelIsBitIdenticalToTheScalarFmaChain) {
  const std::vector<GemmKernel> kernels = fma_kernels();
  if (kernels.empty()) GTEST_SKIP() << kNoFma;
  for (GemmKernel kernel : kernels) {
    set_gemm_kernel(kernel);
    for (int threads : {1, 2}) {
      set_gemm_threads(threads);
      for_each_case([&](const Shape& s, const Matrix& a, const Matrix& b, const Matrix& c0, bool transposed, float alpha,
                        bool accumulate) {
        EXPECT_TRUE(same_bits(product(c0, a, b, transposed, alpha, accumulate),
                              fma_chain(c0, a, b, transposed, alpha, accumulate)))
            << label(kernel, s, transposed, alpha, accumulate) << ", " << threads << " threads";
      });
    }
  }
}

TEST_F(GemmTest, TheBytesDoNotDependOnTheThreadCount) {
  // Large enough for many tiles (and above the size kept on one thread).
  const Matrix a = random_normal_matrix(300, 700, 11), bt = random_normal_matrix(500, 700, 12),
               b = random_normal_matrix(700, 500, 13);
  const Matrix c0 = random_normal_matrix(300, 500, 14);
  for (GemmKernel kernel : available_gemm_kernels()) {
    set_gemm_kernel(kernel);
    set_gemm_threads(1);
    const Matrix abt1 = product(c0, a, bt, true, 0.125f, true), ab1 = product(c0, a, b, false, 1.0f, false);
    for (int threads : {2, 3, 7}) {
      set_gemm_threads(threads);
      EXPECT_EQ(gemm_threads(), threads);
      EXPECT_TRUE(same_bits(product(c0, a, bt, true, 0.125f, true), abt1)) << gemm_kernel_name(kernel) << ", " << threads;
      EXPECT_TRUE(same_bits(product(c0, a, b, false, 1.0f, false), ab1)) << gemm_kernel_name(kernel) << ", " << threads;
    }
  }
}

// Any two FMA kernels give the same bytes because each gives the scalar std::fma chain's: checked
// here on a forward-sized product, one kernel at a time, so that a CPU with only AVX2 checks it
// too (an AVX2 and an AVX-512 machine then agree with each other through the same reference).
TEST_F(GemmTest, TheFmaKernelsGiveTheSameBytes) {
  const std::vector<GemmKernel> fma = fma_kernels();
  if (fma.empty()) GTEST_SKIP() << kNoFma;
  const Matrix a = random_normal_matrix(197, 384, 21), w = random_normal_matrix(1152, 384, 22),
               c0 = random_normal_matrix(197, 1152, 23);
  const Matrix reference = fma_chain(c0, a, w, true, 1.0f, true);
  for (GemmKernel k : fma) {
    set_gemm_kernel(k);
    for (int threads : {1, 2}) {
      set_gemm_threads(threads);
      EXPECT_TRUE(same_bits(product(c0, a, w, true, 1.0f, true), reference)) << gemm_kernel_name(k) << ", " << threads;
    }
  }
}

// A weight's kept panels (packed once, on first use) feed the same chain: every FMA kernel, both
// orientations (x·Wᵀ of the forward, d·W of the gradient), every awkward shape, 1/2/3/7 threads,
// the first product (packed for itself), the second (which packs the kept panels) and the later
// ones (which read them).
TEST_F(GemmTest, KeptWeightPanelsGiveTheScalarFmaChainBitForBit) {
  const std::vector<GemmKernel> kernels = fma_kernels();
  if (kernels.empty()) GTEST_SKIP() << kNoFma;
  for (GemmKernel kernel : kernels) {
    set_gemm_kernel(kernel);
    for_each_case([&](const Shape& s, const Matrix& a, const Matrix& b, const Matrix& c0, bool transposed, float alpha,
                      bool accumulate) {
      const Matrix reference = fma_chain(c0, a, b, transposed, alpha, accumulate);
      const WeightMatrix w = b;  // a fresh weight: nothing packed yet
      for (int threads : {1, 2, 3, 7}) {
        set_gemm_threads(threads);
        EXPECT_TRUE(same_bits(product(c0, a, w, transposed, alpha, accumulate), reference))
            << label(kernel, s, transposed, alpha, accumulate) << ", kept panels, " << threads << " threads";
      }
    });
  }
}

// A PackedWeight (one packing for products cut by rows across threads) against the scalar FMA
// chain: cut into row ranges of every size, each range its own product(), on its first use
// (panels packed into the slot's buffer) and on later ones (the panels kept with the weight).
TEST_F(GemmTest, APackedWeightCutByRowsGivesTheScalarFmaChainBitForBit) {
  const std::vector<GemmKernel> kernels = fma_kernels();
  if (kernels.empty()) GTEST_SKIP() << kNoFma;
  for (GemmKernel kernel : kernels) {
    set_gemm_kernel(kernel);
    for_each_case([&](const Shape& s, const Matrix& a, const Matrix& b, const Matrix& c0, bool transposed, float alpha,
                      bool accumulate) {
      if (!transposed || alpha != 1.0f) return;  // x·Wᵀ only, α = 1: what PackedWeight does
      const Matrix reference = fma_chain(c0, a, b, true, 1.0f, accumulate);
      const WeightMatrix w = b;
      for (int use = 0; use < 3; ++use)
        for (Eigen::Index step : {Eigen::Index{1}, Eigen::Index{7}, Eigen::Index{24}, Eigen::Index{1000}}) {
          const PackedWeight packed(w, use % PackedWeight::kWeightSlots);
          Matrix c = accumulate ? c0 : Matrix::Constant(s.m, s.n, std::numeric_limits<float>::quiet_NaN());
          for (Eigen::Index r = 0; r < s.m; r += step) {
            const Eigen::Index n = std::min(step, s.m - r);
            packed.product(c.middleRows(r, n), a.middleRows(r, n), accumulate ? Accumulate::yes : Accumulate::no);
          }
          EXPECT_TRUE(same_bits(c, reference)) << label(kernel, s, true, 1.0f, accumulate) << ", packed weight, use "
                                               << use << ", rows " << step << " at a time";
        }
    });
  }
}

// The panel layout depends on the kernel (nr): one weight used under each kernel in turn, and
// back, gives each kernel's own bytes (the portable kernel included), as an unkept view does.
TEST_F(GemmTest, AWeightsPanelsFollowTheKernelInUse) {
  const Matrix a = random_normal_matrix(197, 300, 41), b_nk = random_normal_matrix(230, 300, 42),
               c0 = random_normal_matrix(197, 230, 43);
  const Matrix b_kn = b_nk.transpose();
  const WeightMatrix w_nk = b_nk, w_kn = b_kn;  // read as a·Wᵀ (forward) and as a·W (gradient)
  std::vector<GemmKernel> order = available_gemm_kernels();
  const std::vector<GemmKernel> there = order;
  order.insert(order.end(), there.rbegin(), there.rend());  // each kernel, then back again
  for (GemmKernel kernel : order) {
    set_gemm_kernel(kernel);
    EXPECT_TRUE(same_bits(product(c0, a, w_nk, true, 1.0f, true), product(c0, a, b_nk, true, 1.0f, true)))
        << gemm_kernel_name(kernel) << " a·Wᵀ";
    EXPECT_TRUE(same_bits(product(c0, a, w_kn, false, 1.0f, true), product(c0, a, b_kn, false, 1.0f, true)))
        << gemm_kernel_name(kernel) << " a·W";
  }
}

// One weight read both ways, as a block's square projection is (x·Wᵀ in the forward, d·W in its
// gradient): each orientation keeps panels of its own. Square, so that panels kept for one
// orientation would fit the other's product and be read without a word. Both orders, since
// either orientation may be the first to keep its panels: x·Wᵀ twice (the second keeps its
// panels), then a·W three times (packed for itself, kept, read), then each again; and the same
// with a·W first, on a fresh weight. Every product gives the bytes of the same product on a
// plain Matrix (a view, which keeps nothing) and, for the FMA kernels, the scalar chain's.
TEST_F(GemmTest, OneWeightReadInBothOrientationsKeepsPanelsForEach) {
  const std::vector<std::vector<bool>> orders = {{true, true, false, false, false, true, false},
                                                 {false, false, true, true, true, false, true}};
  for (GemmKernel kernel : available_gemm_kernels()) {
    set_gemm_kernel(kernel);
    for (const Eigen::Index d : {Eigen::Index{64}, Eigen::Index{97}}) {
      const Matrix a = random_normal_matrix(50, d, 71), b = random_normal_matrix(d, d, 72),
                   c0 = random_normal_matrix(50, d, 73);
      for (const std::vector<bool>& order : orders) {
        const WeightMatrix w = b;  // a fresh weight: nothing packed yet
        const std::string first = order.front() ? "a·Wᵀ first" : "a·W first";
        for (std::size_t use = 0; use < order.size(); ++use) {
          const bool transposed = order[use];
          const Matrix got = product(c0, a, w, transposed, 1.0f, true);
          const std::string what = gemm_kernel_name(kernel) + (transposed ? " a·Wᵀ " : " a·W ") + std::to_string(d) +
                                   "×" + std::to_string(d) + ", " + first + ", use " + std::to_string(use);
          EXPECT_TRUE(same_bits(got, product(c0, a, b, transposed, 1.0f, true))) << what << ": not the view's bytes";
          if (is_fma_kernel(kernel)) {
            EXPECT_TRUE(same_bits(got, fma_chain(c0, a, b, transposed, 1.0f, true))) << what << ": not the scalar chain";
          }
        }
      }
    }
  }
}

// New values get new panels: a weight assigned after a product must not be read from the old ones.
TEST_F(GemmTest, NewValuesAreNotReadFromOldPanels) {
  const Matrix a = random_normal_matrix(40, 70, 51), b1 = random_normal_matrix(50, 70, 52),
               b2 = random_normal_matrix(50, 70, 53);
  WeightMatrix w = b1;
  for (int use = 0; use < 3; ++use)  // the second product keeps the panels, the third reads them
    EXPECT_TRUE(same_bits(product(Matrix(), a, w, true, 1.0f, false), product(Matrix(), a, b1, true, 1.0f, false)));
  w = b2;
  for (int use = 0; use < 3; ++use)
    EXPECT_TRUE(same_bits(product(Matrix(), a, w, true, 1.0f, false), product(Matrix(), a, b2, true, 1.0f, false)));
  WeightMatrix copy = w;  // a copy shares the values, and the panels
  EXPECT_TRUE(same_bits(product(Matrix(), a, copy, true, 1.0f, false), product(Matrix(), a, b2, true, 1.0f, false)));
}

// Values read in place at an address with float alignment only (a mapping's tensor), packed
// by several threads' first products at once: each gets the right bytes (std::call_once).
TEST_F(GemmTest, AWeightReadInPlaceIsPackedOnceUnderConcurrentFirstUse) {
  const Matrix a = random_normal_matrix(120, 384, 61), b = random_normal_matrix(200, 384, 62);
  auto storage = std::make_shared<std::vector<float>>(static_cast<std::size_t>(b.size()) + 1);
  std::memcpy(storage->data() + 1, b.data(), static_cast<std::size_t>(b.size()) * sizeof(float));
  const WeightMatrix w(storage->data() + 1, b.rows(), b.cols(), storage);
  const Matrix expected = product(Matrix(), a, b, true, 1.0f, false);
  std::vector<Matrix> got(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = product(Matrix(), a, w, true, 1.0f, false); });
  for (std::thread& t : threads) t.join();
  for (const Matrix& g : got) EXPECT_TRUE(same_bits(g, expected));
}

TEST_F(GemmTest, StridedBlocksAreReadAndWrittenInPlace) {
  // q and k as column ranges of one qkv matrix, the result into a column range of a wider one:
  // the layout of the multi-head attention.
  const Matrix qkv = random_normal_matrix(50, 3 * 40, 31), v = random_normal_matrix(50, 20, 32);
  Matrix heads = Matrix::Constant(50, 60, 7.0f);
  const auto q = qkv.middleCols(10, 20), k = qkv.middleCols(50, 20);
  Matrix scores(50, 50);
  gemm_abt(scores, q, k, 0.5f);
  gemm_ab(heads.middleCols(20, 20), scores, v);
  const Matrix q_copy = q, k_copy = k;
  const Matrix expected_scores = fma_chain(Matrix(), q_copy, k_copy, true, 0.5f, false);
  const Matrix expected_heads = fma_chain(Matrix(), expected_scores, v, false, 1.0f, false);
  if (is_fma_kernel(gemm_kernel())) {
    EXPECT_TRUE(same_bits(scores, expected_scores));
    EXPECT_TRUE(same_bits(heads.middleCols(20, 20), expected_heads));
  } else {
    EXPECT_TRUE(scores.isApprox(expected_scores, 1e-5f));
    EXPECT_TRUE(Matrix(heads.middleCols(20, 20)).isApprox(expected_heads, 1e-5f));
  }
  EXPECT_TRUE((heads.leftCols(20).array() == 7.0f).all()) << "columns left of the block were touched";
  EXPECT_TRUE((heads.rightCols(20).array() == 7.0f).all()) << "columns right of the block were touched";
}

TEST_F(GemmTest, AnEmptySumLeavesOrZeroesC) {
  const Matrix a(3, 0), b(4, 0);
  Matrix c = Matrix::Constant(3, 4, 2.5f);
  gemm_abt(c, a, b, 1.0f, Accumulate::yes);
  EXPECT_TRUE((c.array() == 2.5f).all());
  gemm_abt(c, a, b);
  EXPECT_TRUE((c.array() == 0.0f).all());
}

TEST_F(GemmTest, ShapesThatDoNotFitAreRefused) {
  Matrix c(3, 4);
  EXPECT_THROW(gemm_abt(c, Matrix(3, 5), Matrix(4, 6)), Error);  // inner sizes differ
  EXPECT_THROW(gemm_abt(c, Matrix(2, 5), Matrix(4, 5)), Error);  // c has the wrong rows
  EXPECT_THROW(gemm_ab(c, Matrix(3, 5), Matrix(5, 3)), Error);   // c has the wrong columns
  EXPECT_THROW(gemm_ab(c, Matrix(3, 5), Matrix(6, 4)), Error);
}

}  // namespace
}  // namespace vitattn
