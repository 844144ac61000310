// Layer norm, softmax and GELU split over threads by rows (core/parallel_rows.hpp), and the
// pool under them (core/parallel_for.hpp, its teams): every
// row done exactly once, the same bytes at any thread count, each row the same as if it
// were computed alone, and the values against a plain double-precision formula.
#include "core/parallel_rows.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "core/parallel_for.hpp"
#include "core/gemm.hpp"
#include "core/layers.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {

class ParallelRowsTest : public ::testing::Test {
 protected:
  void TearDown() override { set_gemm_threads(1); }
};

bool same_bits(const Matrix& x, const Matrix& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         (x.size() == 0 || std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<std::size_t>(x.size())) == 0);
}

// Odd widths leave a tail after Eigen's vector packets, so a row whose split between the
// vector and scalar paths moved with the thread's range would show here.
struct Case {
  Eigen::Index rows, cols;
};
constexpr Case kCases[] = {{197, 3073}, {197, 197}, {50, 768}, {3, 20001}, {1, 40000}};

Matrix layer_norm_of(const Matrix& x) {
  std::mt19937 rng(5);
  LayerNorm n{test::random_matrix(1, x.cols(), rng), test::random_matrix(1, x.cols(), rng)};
  Matrix y;
  layer_norm_into(x, n, 1e-6f, y);
  return y;
}
Matrix gelu_of(Matrix x, Gelu kind) {
  gelu_inplace(x, kind);
  return x;
}
Matrix softmax_of(Matrix x) {
  softmax_rows(x);
  return x;
}

// Each layer at threads t, for every case.
std::vector<Matrix> all_layers(int threads) {
  set_gemm_threads(threads);
  std::vector<Matrix> out;
  std::mt19937 rng(17);
  for (const Case& c : kCases) {
    const Matrix x = test::random_matrix(c.rows, c.cols, rng, 4.0f);
    out.push_back(layer_norm_of(x));
    out.push_back(gelu_of(x, Gelu::erf));
    out.push_back(gelu_of(x, Gelu::tanh));
    out.push_back(softmax_of(x));
  }
  return out;
}

TEST_F(ParallelRowsTest, EveryRowIsHandedOutExactlyOnce) {
  for (int threads : {1, 2, 3, 7})
    for (Eigen::Index n : {Eigen::Index{1}, Eigen::Index{2}, Eigen::Index{5}, Eigen::Index{197}, Eigen::Index{1000}}) {
      set_gemm_threads(threads);
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::mutex m;
      parallel_rows(n, 1 << 20, [&](Eigen::Index begin, Eigen::Index end) {
        ASSERT_LE(0, begin);
        ASSERT_LT(begin, end);
        ASSERT_LE(end, n);
        std::lock_guard lock(m);
        for (Eigen::Index i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
      });
      for (Eigen::Index i = 0; i < n; ++i)
        EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "row " << i << " of " << n << ", " << threads << " threads";
    }
}

// parallel_row_blocks: every row once, and every range starts at a multiple of the quantum
// (the register tiles of a range's products stay whole).
TEST_F(ParallelRowsTest, RowBlocksCoverEveryRowOnceAndStartOnTheQuantum) {
  for (int threads : {1, 2, 3, 7})
    for (Eigen::Index n : {Eigen::Index{1}, Eigen::Index{23}, Eigen::Index{25}, Eigen::Index{197}, Eigen::Index{1000}}) {
      set_gemm_threads(threads);
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::mutex m;
      parallel_row_blocks(n, 24, 1 << 20, [&](Eigen::Index begin, Eigen::Index end) {
        ASSERT_LT(begin, end);
        ASSERT_LE(end, n);
        EXPECT_EQ(begin % 24, 0) << "a range starts at row " << begin;
        EXPECT_TRUE(end == n || end % 24 == 0) << "a range ends at row " << end << " of " << n;
        std::lock_guard lock(m);
        for (Eigen::Index i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
      });
      for (Eigen::Index i = 0; i < n; ++i)
        EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << "row " << i << " of " << n << ", " << threads << " threads";
    }
}

// Many short calls in a row, as a forward's steps make them: each task exactly once per call, a task's throw reaches the caller and the next call still runs every task, a
// call from inside a task runs there, and calls from two threads at once each complete.
TEST_F(ParallelRowsTest, ThePoolRunsEveryTaskOnceAcrossManyCalls) {
  for (int threads : {2, 3, 7}) {
    for (int call = 0; call < 100; ++call) {
      const int n_tasks = 1 + call % 9;
      std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n_tasks));
      parallel_for(n_tasks, threads, [&](int t) { runs[static_cast<std::size_t>(t)].fetch_add(1); });
      for (int t = 0; t < n_tasks; ++t) ASSERT_EQ(runs[static_cast<std::size_t>(t)].load(), 1) << "call " << call;
    }
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(8, threads, [&](int t) {
                   ran.fetch_add(1);
                   if (t == 3) throw Error("task 3");
                 }),
                 Error);
    EXPECT_EQ(ran.load(), 8);
    std::atomic<int> inner{0};
    parallel_for(4, threads, [&](int) { parallel_for(5, threads, [&](int) { inner.fetch_add(1); }); });
    EXPECT_EQ(inner.load(), 20);
  }
  std::atomic<int> total{0};
  const auto caller = [&] {
    for (int call = 0; call < 200; ++call) parallel_for(3, 2, [&](int) { total.fetch_add(1); });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total.load(), 2 * 200 * 3);
}

TEST_F(ParallelRowsTest, TheBytesDoNotDependOnTheThreadCount) {
  const std::vector<Matrix> one = all_layers(1);
  for (int threads : {2, 3, 7}) {
    const std::vector<Matrix> many = all_layers(threads);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i)
      EXPECT_TRUE(same_bits(many[i], one[i])) << "case " << i / 4 << ", layer " << i % 4 << ", " << threads << " threads";
  }
}

TEST_F(ParallelRowsTest, EachRowIsComputedAsIfItWereAlone) {
  // A row's bytes do not depend on the other rows nor on which range it fell in: the whole
  // matrix on 2 threads against slices of its rows, each as a matrix of its own on one thread.
  // Slices start at multiples of 4 rows, so each row keeps its place relative to a 16-byte
  // boundary (Eigen's reductions start their vector loads at the first aligned value).
  std::mt19937 rng(23);
  const Matrix x = test::random_matrix(197, 3073, rng, 4.0f);
  set_gemm_threads(2);
  const Matrix ln = layer_norm_of(x), ge = gelu_of(x, Gelu::erf), gt = gelu_of(x, Gelu::tanh), sm = softmax_of(x);
  set_gemm_threads(1);
  for (const auto& [begin, n] : {std::pair<Eigen::Index, Eigen::Index>{0, 1}, {4, 3}, {100, 1}, {196, 1}, {40, 97}}) {
    const Matrix part = x.middleRows(begin, n);
    EXPECT_TRUE(same_bits(layer_norm_of(part), ln.middleRows(begin, n))) << "layer norm, rows from " << begin;
    EXPECT_TRUE(same_bits(gelu_of(part, Gelu::erf), ge.middleRows(begin, n))) << "GELU erf, rows from " << begin;
    EXPECT_TRUE(same_bits(gelu_of(part, Gelu::tanh), gt.middleRows(begin, n))) << "GELU tanh, rows from " << begin;
    EXPECT_TRUE(same_bits(softmax_of(part), sm.middleRows(begin, n))) << "softmax, rows from " << begin;
  }
}

TEST_F(ParallelRowsTest, ValuesMatchTheFormulasInDouble) {
  std::mt19937 rng(29);
  const Matrix x = test::random_matrix(64, 1001, rng, 4.0f);
  set_gemm_threads(3);
  const Matrix ge = gelu_of(x, Gelu::erf), gt = gelu_of(x, Gelu::tanh), sm = softmax_of(x);
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double sum = 0, row_max = -1e300;
    for (Eigen::Index j = 0; j < x.cols(); ++j) row_max = std::max(row_max, double{x(i, j)});
    for (Eigen::Index j = 0; j < x.cols(); ++j) sum += std::exp(double{x(i, j)} - row_max);
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      const double v = x(i, j);
      const double erf_gelu = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      const double tanh_gelu = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      ASSERT_NEAR(ge(i, j), erf_gelu, 2e-6 * (1 + std::abs(v))) << i << ", " << j;
      ASSERT_NEAR(gt(i, j), tanh_gelu, 2e-6 * (1 + std::abs(v))) << i << ", " << j;
      ASSERT_NEAR(sm(i, j), std::exp(v - row_max) / sum, 1e-7 + 1e-5 * std::exp(v - row_max) / sum) << i << ", " << j;
    }
  }
}

}  // namespace
}  // namespace vitattn
