#include "gemm_bf16.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "error.hpp"
#include "gemm_kernels_bf16.hpp"
#include "parallel_for.hpp"

namespace vitattn {
namespace {

using gemm_detail::kBf16Mr;
using gemm_detail::kBf16Nr;
using Index = std::ptrdiff_t;
using Pair = std::uint32_t;

// C's tiles handed to threads (multiples of the register tile), and k's chunks, in pairs, whose
// panels stay in cache. None of them enters an element's chain (gemm_bf16.hpp).
constexpr Index kTileRows = 96, kTileCols = 256, kDepthPairs = 128;
constexpr Index kSerialWork = Index{1} << 18;  // products smaller than this (m·n·k) stay on one thread
// The cached form of a weight's bf16 panels for x·Wᵀ (packed_panels.hpp: after the float forms).
constexpr int kBf16TransposedForm = PanelCache::kBf16Forms + 1;

std::atomic<Precision> g_precision{Precision::fp32};
thread_local bool t_keep_float32 = false;

Index round_up(Index x, Index q) { return (x + q - 1) / q * q; }
Index div_up(Index x, Index q) { return (x + q - 1) / q; }

// Pairs aligned for the kernel's loads.
std::shared_ptr<Pair[]> pair_storage(Index count) {
  void* p = ::operator new[](static_cast<std::size_t>(count) * sizeof(Pair), std::align_val_t{64});
  return std::shared_ptr<Pair[]>(static_cast<Pair*>(p), [](Pair* q) { ::operator delete[](q, std::align_val_t{64}); });
}

// A per-thread buffer of pairs, reused across products.
struct Buffer {
  std::shared_ptr<Pair[]> data;
  Index capacity = 0;
  Pair* get(Index count) {
    if (count > capacity) {
      data = pair_storage(count);
      capacity = count;
    }
    return data.get();
  }
};

// Where chunk q0 of a panel set starts, and the panel of rows/columns r0 in it.
Index panel_offset(Index q0, Index extent_padded, Index r0, Index qc) { return q0 * extent_padded + r0 * qc; }

// Rows of x (m, k), each value scaled by α and rounded to bf16, as panels of `width` rows
// (width = mr for a, nr for W):
//   out[panel_offset(q0, m_padded, r0, qc) + q·width + i] = pair(x(r0+i, 2(q0+q)), x(r0+i, 2(q0+q)+1)),
// 0 past m or past k.
void pack_rows(const float* x, Index ldx, Index m, Index k, float alpha, int width, Pair* out) {
  const Index pairs = div_up(k, 2), m_padded = round_up(m, width);
  for (Index q0 = 0; q0 < pairs; q0 += kDepthPairs) {
    const Index qc = std::min(kDepthPairs, pairs - q0);
    for (Index r0 = 0; r0 < m; r0 += width) {
      Pair* panel = out + panel_offset(q0, m_padded, r0, qc);
      for (Index i = 0; i < width; ++i) {
        const Index r = r0 + i;
        if (r < m) gemm_detail::pack_row_pairs(x + r * ldx + 2 * q0, k - 2 * q0, qc, alpha, panel + i, width);
        else
          for (Index q = 0; q < qc; ++q) panel[q * width + i] = 0;
      }
    }
  }
}

struct Product {
  float* c;
  Index ldc;
  Index m, n, k;
  bool accumulate;
  const Pair* a;  // panels of kBf16Mr rows
  const Pair* w;  // panels of kBf16Nr columns (W's rows)
};

// A register tile at C's edge, through a full-size scratch tile.
void edge_tile(Index qc, const Pair* ap, const Pair* bp, float* c, Index ldc, Index rows, Index cols, bool load_c) {
  alignas(64) float tile[kBf16Mr * kBf16Nr] = {};
  if (load_c)
    for (Index i = 0; i < rows; ++i) std::memcpy(tile + i * kBf16Nr, c + i * ldc, static_cast<std::size_t>(cols) * sizeof(float));
  gemm_detail::kernel_bf16(qc, ap, bp, tile, kBf16Nr, load_c);
  for (Index i = 0; i < rows; ++i) std::memcpy(c + i * ldc, tile + i * kBf16Nr, static_cast<std::size_t>(cols) * sizeof(float));
}

// C[i0 … i0+rows, j0 … j0+cols]: each element's whole chain, chunk after chunk of k.
void tile(const Product& g, Index i0, Index rows, Index j0, Index cols) {
  const Index pairs = div_up(g.k, 2), m_padded = round_up(g.m, kBf16Mr), n_padded = round_up(g.n, kBf16Nr);
  for (Index q0 = 0; q0 < pairs; q0 += kDepthPairs) {
    const Index qc = std::min(kDepthPairs, pairs - q0);
    const bool load_c = g.accumulate || q0 > 0;
    for (Index jr = 0; jr < cols; jr += kBf16Nr) {
      const Pair* bp = g.w + panel_offset(q0, n_padded, j0 + jr, qc);
      for (Index ir = 0; ir < rows; ir += kBf16Mr) {
        const Pair* ap = g.a + panel_offset(q0, m_padded, i0 + ir, qc);
        float* c = g.c + (i0 + ir) * g.ldc + j0 + jr;
        const Index h = std::min<Index>(kBf16Mr, rows - ir), w = std::min<Index>(kBf16Nr, cols - jr);
        if (h == kBf16Mr && w == kBf16Nr) gemm_detail::kernel_bf16(qc, ap, bp, c, g.ldc, load_c);
        else edge_tile(qc, ap, bp, c, g.ldc, h, w, load_c);
      }
    }
  }
}

// W's bf16 panels: kept with the weight from its second product on, else packed for this one
// (the same values either way), as the float forms are (packed_panels.hpp).
const Pair* weight_pairs(const WeightMatrix& w, Buffer& buffer) {
  const Index pairs_per_panel = round_up(w.rows(), kBf16Nr) * div_up(w.cols(), 2);
  PanelCache& cache = w.panels();
  if (!cache.read_before(kBf16TransposedForm)) {
    Pair* out = buffer.get(pairs_per_panel);
    pack_rows(w.data(), w.cols(), w.rows(), w.cols(), 1.0f, kBf16Nr, out);
    return out;
  }
  return cache
      .get(kBf16TransposedForm,
           [&] {
             PackedPanels packed;
             packed.k = w.cols();
             packed.n = w.rows();
             packed.nr = kBf16Nr;
             packed.n_padded = round_up(w.rows(), kBf16Nr);
             packed.pairs = pair_storage(pairs_per_panel);
             pack_rows(w.data(), w.cols(), w.rows(), w.cols(), 1.0f, kBf16Nr, packed.pairs.get());
             return packed;
           })
      .pairs.get();
}

std::string cpu_refusal() {
  return "this CPU has no AVX512-BF16 instructions (vdpbf16ps), which bf16 products need; use fp32";
}

}  // namespace

namespace {

void product_bf16(MatrixView c, ConstMatrixView a, const WeightMatrix& w, float alpha, Accumulate accumulate, bool here) {
  if (!gemm_detail::cpu_runs_bf16()) throw Error(cpu_refusal());
  const Index m = a.rows(), n = w.rows(), k = a.cols();
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: c stays, or becomes 0
    if (accumulate == Accumulate::no) c.setZero();
    return;
  }
  thread_local Buffer a_buf, w_buf;
  Pair* a_pairs = a_buf.get(round_up(m, kBf16Mr) * div_up(k, 2));
  pack_rows(a.data(), a.outerStride(), m, k, alpha, kBf16Mr, a_pairs);
  const Product g{c.data(), c.outerStride(), m, n, k, accumulate == Accumulate::yes, a_pairs, weight_pairs(w, w_buf)};
  const Index row_tiles = div_up(m, kTileRows), col_tiles = div_up(n, kTileCols);
  const int threads = here || m * n * k < kSerialWork ? 1 : gemm_threads();
  parallel_for(static_cast<int>(row_tiles * col_tiles), threads, [&](int t) {
    const Index i0 = t / col_tiles * kTileRows, j0 = t % col_tiles * kTileCols;
    tile(g, i0, std::min(kTileRows, m - i0), j0, std::min(kTileCols, n - j0));
  });
}

}  // namespace

void gemm_abt_weight_bf16(MatrixView c, ConstMatrixView a, const WeightMatrix& w, float alpha, Accumulate accumulate) {
  product_bf16(c, a, w, alpha, accumulate, false);
}

void gemm_abt_weight_bf16_here(MatrixView c, ConstMatrixView a, const WeightMatrix& w, Accumulate accumulate) {
  product_bf16(c, a, w, 1.0f, accumulate, true);
}

void set_gemm_precision(Precision precision) {
  if (!cpu_runs(precision)) throw Error(cpu_refusal());
  g_precision.store(precision);
}

Precision gemm_precision() { return g_precision.load(std::memory_order_relaxed); }

KeepFloat32::KeepFloat32() : outer_(t_keep_float32) { t_keep_float32 = true; }
KeepFloat32::~KeepFloat32() { t_keep_float32 = outer_; }

Precision weight_product_precision() { return t_keep_float32 ? Precision::fp32 : gemm_precision(); }

bool cpu_runs(Precision precision) { return precision == Precision::fp32 || gemm_detail::cpu_runs_bf16(); }

std::string precision_name(Precision precision) { return precision == Precision::bf16 ? "bf16" : "fp32"; }

}  // namespace vitattn
