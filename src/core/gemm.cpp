#include "gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "error.hpp"
#include "gemm_kernels.hpp"
#include "parallel_for.hpp"

namespace vitattn {
namespace {

using gemm_detail::KernelInfo;
using gemm_detail::kMaxMr;
using gemm_detail::kMaxNr;
using Index = std::ptrdiff_t;

// The tiles of C handed to threads: at most kTileRows × kTileCols, cut evenly, the same for
// every thread count. Along k, chunks of kDepth keep the packed panels in cache; the chain
// goes on across chunks through C, which holds the running sum in float, as a register would.
constexpr Index kTileRows = 96, kTileCols = 256, kDepth = 256;
constexpr Index kRowQuantum = 24, kColQuantum = 32;  // multiples of every kernel's mr and nr
constexpr Index kSerialWork = Index{1} << 18;         // products smaller than this (m·n·k) stay on one thread

// The kernel in use, chosen from the CPU on first use.
std::atomic<GemmKernel>& kernel_in_use() {
  static std::atomic<GemmKernel> kernel{best_gemm_kernel()};
  return kernel;
}
std::atomic<int> g_threads{1};

Index round_up(Index x, Index q) { return (x + q - 1) / q * q; }

// One axis cut into `count` tiles of `size` (the last one shorter).
struct Cut {
  Index size = 0, count = 0;
};

Cut cut(Index extent, Index max_tile, Index quantum) {
  const Index count = (extent + max_tile - 1) / max_tile;
  const Index size = round_up((extent + count - 1) / count, quantum);
  return {size, (extent + size - 1) / size};
}

// c (m, n) [+]= α·a (m, k) · op(b) (k, n); op(b) = bᵀ when b is stored (n, k).
struct Product {
  float* c;
  Index ldc;
  const float* a;
  Index lda;
  const float* b;
  Index ldb;
  bool b_transposed;  // b stored (n, k)
  Index m, n, k;
  float alpha;
  bool accumulate;
};

// A float buffer aligned for the widest vector loads, kept per thread across products.
struct Buffer {
  std::unique_ptr<float[], void (*)(float*)> data{nullptr, [](float* p) { ::operator delete[](p, std::align_val_t{64}); }};
  Index capacity = 0;
  float* get(Index n) {
    if (n > capacity) {
      data.reset(static_cast<float*>(::operator new[](static_cast<std::size_t>(n) * sizeof(float), std::align_val_t{64})));
      capacity = n;
    }
    return data.get();
  }
};

// a[i0 … i0+rows, p0 … p0+kc] → panels of mr rows: panel[p·mr + i] = α·a_i,p, rows past the
// end 0. Scaling here, in the shared code, makes α one rounding the same for every kernel.
void pack_a(const Product& g, Index i0, Index rows, Index p0, Index kc, int mr, float* out) {
  for (Index r0 = 0; r0 < rows; r0 += mr, out += kc * mr)
    for (Index i = 0; i < mr; ++i) {
      if (r0 + i >= rows) {
        for (Index p = 0; p < kc; ++p) out[p * mr + i] = 0.0f;
        continue;
      }
      const float* src = g.a + (i0 + r0 + i) * g.lda + p0;
      for (Index p = 0; p < kc; ++p) out[p * mr + i] = g.alpha * src[p];
    }
}

// op(b)[p0 … p0+kc, j0 … j0+cols] → panels of nr columns: panel[p·nr + j] = op(b)_p,j, columns past
// the end 0.
void pack_b(const Product& g, Index j0, Index cols, Index p0, Index kc, int nr, float* out) {
  for (Index c0 = 0; c0 < cols; c0 += nr, out += kc * nr) {
    const Index w = std::min<Index>(nr, cols - c0);
    if (g.b_transposed) {  // b (n, k): row j of b is column j of op(b)
      for (Index j = 0; j < nr; ++j) {
        if (j >= w) {
          for (Index p = 0; p < kc; ++p) out[p * nr + j] = 0.0f;
          continue;
        }
        const float* src = g.b + (j0 + c0 + j) * g.ldb + p0;
        for (Index p = 0; p < kc; ++p) out[p * nr + j] = src[p];
      }
    } else {  // b (k, n): a contiguous run of each row
      for (Index p = 0; p < kc; ++p) {
        const float* src = g.b + (p0 + p) * g.ldb + j0 + c0;
        std::memcpy(out + p * nr, src, static_cast<std::size_t>(w) * sizeof(float));
        std::fill(out + p * nr + w, out + (p + 1) * nr, 0.0f);
      }
    }
  }
}

// A register tile at C's edge: through a full-size scratch tile, so kernels only see whole tiles.
void edge_tile(const KernelInfo& kern, Index kc, const float* ap, const float* bp, float* c, Index ldc, Index rows,
               Index cols, bool load_c) {
  alignas(64) float tile[kMaxMr * kMaxNr] = {};
  if (load_c)
    for (Index i = 0; i < rows; ++i) std::memcpy(tile + i * kern.nr, c + i * ldc, static_cast<std::size_t>(cols) * sizeof(float));
  kern.run(kc, ap, bp, tile, kern.nr, load_c);
  for (Index i = 0; i < rows; ++i) std::memcpy(c + i * ldc, tile + i * kern.nr, static_cast<std::size_t>(cols) * sizeof(float));
}

// C[i0 … i0+rows, j0 … j0+cols], the whole chain over k.
void tile(const Product& g, const KernelInfo& kern, Index i0, Index rows, Index j0, Index cols) {
  thread_local Buffer a_buf, b_buf;
  const Index depth = std::min(kDepth, g.k);
  float* ap = a_buf.get(round_up(rows, kern.mr) * depth);
  float* bp = b_buf.get(round_up(cols, kern.nr) * depth);
  for (Index p0 = 0; p0 < g.k; p0 += kDepth) {
    const Index kc = std::min(kDepth, g.k - p0);
    const bool load_c = g.accumulate || p0 > 0;
    pack_a(g, i0, rows, p0, kc, kern.mr, ap);
    pack_b(g, j0, cols, p0, kc, kern.nr, bp);
    for (Index jr = 0; jr < cols; jr += kern.nr) {
      const float* b_panel = bp + jr * kc;
      for (Index ir = 0; ir < rows; ir += kern.mr) {
        const float* a_panel = ap + ir * kc;
        float* c = g.c + (i0 + ir) * g.ldc + j0 + jr;
        const Index h = std::min<Index>(kern.mr, rows - ir), w = std::min<Index>(kern.nr, cols - jr);
        if (h == kern.mr && w == kern.nr) kern.run(kc, a_panel, b_panel, c, g.ldc, load_c);
        else edge_tile(kern, kc, a_panel, b_panel, c, g.ldc, h, w, load_c);
      }
    }
  }
}

void run(const Product& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // an empty sum: c stays, or becomes 0
    if (!g.accumulate)
      for (Index i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    return;
  }
  const KernelInfo kern = gemm_detail::kernel_info(kernel_in_use().load(std::memory_order_relaxed));
  const Cut rows = cut(g.m, kTileRows, kRowQuantum), cols = cut(g.n, kTileCols, kColQuantum);
  const auto n_tiles = static_cast<int>(rows.count * cols.count);
  const int threads = g.m * g.n * g.k < kSerialWork ? 1 : g_threads.load(std::memory_order_relaxed);
  parallel_for(n_tiles, threads, [&](int t) {
    const Index r = t / cols.count, s = t % cols.count;
    const Index i0 = r * rows.size, j0 = s * cols.size;
    tile(g, kern, i0, std::min(rows.size, g.m - i0), j0, std::min(cols.size, g.n - j0));
  });
}

std::string shape(const char* name, Index rows, Index cols) {
  return std::string(name) + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace

void gemm_abt(MatrixView c, ConstMatrixView a, ConstMatrixView b, float alpha, Accumulate accumulate) {
  if (a.cols() != b.cols() || c.rows() != a.rows() || c.cols() != b.rows())
    throw Error("gemm_abt: shapes do not fit: " + shape("c", c.rows(), c.cols()) + " = " + shape("a", a.rows(), a.cols()) +
                " · " + shape("b", b.rows(), b.cols()) + "ᵀ");
  run({c.data(), c.outerStride(), a.data(), a.outerStride(), b.data(), b.outerStride(), true, a.rows(), b.rows(), a.cols(),
       alpha, accumulate == Accumulate::yes});
}

void gemm_ab(MatrixView c, ConstMatrixView a, ConstMatrixView b, float alpha, Accumulate accumulate) {
  if (a.cols() != b.rows() || c.rows() != a.rows() || c.cols() != b.cols())
    throw Error("gemm_ab: shapes do not fit: " + shape("c", c.rows(), c.cols()) + " = " + shape("a", a.rows(), a.cols()) +
                " · " + shape("b", b.rows(), b.cols()));
  run({c.data(), c.outerStride(), a.data(), a.outerStride(), b.data(), b.outerStride(), false, a.rows(), b.cols(), a.cols(),
       alpha, accumulate == Accumulate::yes});
}

std::vector<GemmKernel> available_gemm_kernels() {
  std::vector<GemmKernel> kernels;
  for (GemmKernel k : {GemmKernel::portable, GemmKernel::avx2_fma, GemmKernel::avx512})
    if (gemm_detail::cpu_runs(k)) kernels.push_back(k);
  return kernels;
}

GemmKernel best_gemm_kernel() {
  if (gemm_detail::cpu_runs(GemmKernel::avx512)) return GemmKernel::avx512;
  if (gemm_detail::cpu_runs(GemmKernel::avx2_fma)) return GemmKernel::avx2_fma;
  return GemmKernel::portable;
}

GemmKernel gemm_kernel() { return kernel_in_use().load(); }

void set_gemm_kernel(GemmKernel kernel) {
  if (!gemm_detail::cpu_runs(kernel)) throw Error("gemm: this CPU cannot run the " + gemm_kernel_name(kernel) + " kernel");
  kernel_in_use().store(kernel);
}

std::string gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable: return "portable";
    case GemmKernel::avx2_fma: return "avx2+fma";
    case GemmKernel::avx512: return "avx512";
  }
  return "?";
}

void set_gemm_threads(int threads) { g_threads.store(std::max(1, threads)); }
int gemm_threads() { return g_threads.load(); }

}  // namespace vitattn
