#include "gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "error.hpp"
#include "gemm_bf16.hpp"
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
constexpr Index kRowQuantum = PackedWeight::kRowQuantum, kColQuantum = 32;  // multiples of every kernel's mr and nr
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
  PanelCache* b_panels = nullptr;  // b is a weight whose panels are kept (packed_panels.hpp)
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

// mr rows of a (row stride lda, from column p0) → one panel: out[p·mr + i] = α·a_i,p, rows at
// or past `rows` 0. Scaling here, in the shared code, makes α one rounding the same for every
// kernel. MR fixed at compile time: the loop over p writes out sequentially.
template <int MR>
void pack_a_panel(const float* a, Index lda, Index rows, Index kc, float alpha, float* out) {
  if (rows == MR) {
    for (Index p = 0; p < kc; ++p)
      for (int i = 0; i < MR; ++i) out[p * MR + i] = alpha * a[i * lda + p];
    return;
  }
  for (Index p = 0; p < kc; ++p)
    for (int i = 0; i < MR; ++i) out[p * MR + i] = i < rows ? alpha * a[i * lda + p] : 0.0f;
}

void pack_a_rows(const Product& g, Index r0, Index rows, Index p0, Index kc, int mr, float* out) {
  const float* src = g.a + r0 * g.lda + p0;
  switch (mr) {
    case 12: return pack_a_panel<12>(src, g.lda, rows, kc, g.alpha, out);
    case 6: return pack_a_panel<6>(src, g.lda, rows, kc, g.alpha, out);
    case 4: return pack_a_panel<4>(src, g.lda, rows, kc, g.alpha, out);
    default: break;
  }
  for (Index p = 0; p < kc; ++p)
    for (Index i = 0; i < mr; ++i) out[p * mr + i] = i < rows ? g.alpha * src[i * g.lda + p] : 0.0f;
}

// Panels of a whole operand, in the layout of packed_panels.hpp: chunk p0 of k at
// base + p0·extent_padded, panel r0 of it at + r0·kc. Every tile finds its panels there.
Index panel_offset(Index p0, Index extent_padded, Index r0, Index kc) { return p0 * extent_padded + r0 * kc; }

// All of α·a (m, k) → panels of mr rows, once per product (each tile reads its rows' panels).
void pack_a_all(const Product& g, int mr, float* out) {
  const Index m_padded = round_up(g.m, mr);
  for (Index p0 = 0; p0 < g.k; p0 += kDepth) {
    const Index kc = std::min(kDepth, g.k - p0);
    for (Index r0 = 0; r0 < g.m; r0 += mr)
      pack_a_rows(g, r0, std::min<Index>(mr, g.m - r0), p0, kc, mr, out + panel_offset(p0, m_padded, r0, kc));
  }
}

// All of op(b) (k, n) → panels of nr columns, columns past n 0 (packed_panels.hpp's layout).
void pack_b_all(const float* b, Index ldb, bool transposed, Index k, Index n, int nr, float* out) {
  const Index n_padded = round_up(n, nr);
  for (Index p0 = 0; p0 < k; p0 += kDepth) {
    const Index kc = std::min(kDepth, k - p0);
    for (Index c0 = 0; c0 < n; c0 += nr) {
      const Index w = std::min<Index>(nr, n - c0);
      float* panel = out + panel_offset(p0, n_padded, c0, kc);
      if (transposed) gemm_detail::pack_transposed(b + c0 * ldb + p0, ldb, w, kc, nr, panel);  // b (n, k)
      else
        for (Index p = 0; p < kc; ++p) {  // b (k, n): a contiguous run of each row
          std::memcpy(panel + p * nr, b + (p0 + p) * ldb + c0, static_cast<std::size_t>(w) * sizeof(float));
          std::fill(panel + p * nr + w, panel + (p + 1) * nr, 0.0f);
        }
    }
  }
}

// Storage for a weight's panels, kept as long as the model: 64-byte aligned for the kernels'
// loads and, on Linux, in transparent huge pages where the system allows them on request
// (madvise mode): the panels are a copy of the weights, megabytes written once, and with 4 KiB
// pages the page faults of that first write cost as much as the packing itself.
std::shared_ptr<float[]> panel_storage(std::size_t floats) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::size_t bytes = floats * sizeof(float);
  const std::size_t align = bytes >= kHuge ? kHuge : 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = ::operator new[](rounded, std::align_val_t{align});
#ifdef MADV_HUGEPAGE
  if (align == kHuge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: refused, the pages stay small
#endif
  return std::shared_ptr<float[]>(static_cast<float*>(p),
                                  [align](float* q) { ::operator delete[](q, std::align_val_t{align}); });
}

// Which cached form a (kernel, orientation) is.
int form_of(GemmKernel kernel, bool transposed) { return static_cast<int>(kernel) * 2 + (transposed ? 1 : 0); }

// A weight's panels for this kernel and orientation, packed on first use (packed_panels.hpp).
const PackedPanels& weight_panels(const Product& g, GemmKernel kernel, int nr) {
  return g.b_panels->get(form_of(kernel, g.b_transposed), [&] {
    PackedPanels packed;
    packed.k = g.k;
    packed.n = g.n;
    packed.nr = nr;
    packed.n_padded = round_up(g.n, nr);
    packed.data = panel_storage(static_cast<std::size_t>(packed.n_padded * g.k));
    pack_b_all(g.b, g.ldb, g.b_transposed, g.k, g.n, nr, packed.data.get());
    return packed;
  });
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

// Both operands' panels for one product: a packed for it, b packed for it or kept with the weight.
struct Panels {
  const float* a;
  Index m_padded;
  const float* b;
  Index n_padded;
};

// C[i0 … i0+rows, j0 … j0+cols], the whole chain over k, from the product's panels.
void tile(const Product& g, const KernelInfo& kern, const Panels& panels, Index i0, Index rows, Index j0, Index cols) {
  for (Index p0 = 0; p0 < g.k; p0 += kDepth) {
    const Index kc = std::min(kDepth, g.k - p0);
    const bool load_c = g.accumulate || p0 > 0;
    const float* ap = panels.a + panel_offset(p0, panels.m_padded, i0, kc);
    const float* bp = panels.b + panel_offset(p0, panels.n_padded, j0, kc);
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

// The cases with nothing to multiply: an empty C, or an empty sum (c stays, or becomes 0).
// True when g was one of them.
bool trivial(const Product& g) {
  if (g.m == 0 || g.n == 0) return true;
  if (g.k != 0) return false;
  if (!g.accumulate)
    for (Index i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
  return true;
}

// α·a's panels, packed on the calling thread into a buffer of its own, once per product.
const float* pack_a_here(const Product& g, const KernelInfo& kern, Index m_padded) {
  thread_local Buffer a_buf;
  float* a_panels = a_buf.get(m_padded * g.k);
  pack_a_all(g, kern.mr, a_panels);
  return a_panels;
}

// op(b)'s panels: kept with the weight from its second product on, else packed on the calling
// thread into `scratch`.
void b_panels_for(const Product& g, GemmKernel kernel, const KernelInfo& kern, Buffer& scratch, Panels& panels) {
  if (g.b_panels && g.b_panels->read_before(form_of(kernel, g.b_transposed))) {
    const PackedPanels& kept = weight_panels(g, kernel, kern.nr);
    panels.b = kept.data.get();
    panels.n_padded = kept.n_padded;
    return;
  }
  panels.n_padded = round_up(g.n, kern.nr);
  float* b_panels = scratch.get(panels.n_padded * g.k);
  pack_b_all(g.b, g.ldb, g.b_transposed, g.k, g.n, kern.nr, b_panels);
  panels.b = b_panels;
}

// Every tile of C, on up to `threads` threads (the tiles are the same whatever that is).
void run_tiles(const Product& g, const KernelInfo& kern, const Panels& panels, int threads) {
  const Cut rows = cut(g.m, kTileRows, kRowQuantum), cols = cut(g.n, kTileCols, kColQuantum);
  const auto n_tiles = static_cast<int>(rows.count * cols.count);
  const auto one_tile = [&](int t) {
    const Index r = t / cols.count, s = t % cols.count;
    const Index i0 = r * rows.size, j0 = s * cols.size;
    tile(g, kern, panels, i0, std::min(rows.size, g.m - i0), j0, std::min(cols.size, g.n - j0));
  };
  if (threads <= 1) {
    for (int t = 0; t < n_tiles; ++t) one_tile(t);
    return;
  }
  parallel_for(n_tiles, threads, one_tile);
}

void run(const Product& g) {
  if (trivial(g)) return;
  const GemmKernel kernel = kernel_in_use().load(std::memory_order_relaxed);
  const KernelInfo kern = gemm_detail::kernel_info(kernel);
  // The panels, packed once per product (a, an activation's b) or once per weight (a kept b),
  // before any tile: no tile packs what another tile packs too.
  thread_local Buffer b_buf;
  Panels panels{};
  panels.m_padded = round_up(g.m, kern.mr);
  panels.a = pack_a_here(g, kern, panels.m_padded);
  b_panels_for(g, kernel, kern, b_buf, panels);
  run_tiles(g, kern, panels, g.m * g.n * g.k < kSerialWork ? 1 : g_threads.load(std::memory_order_relaxed));
}

// x·Wᵀ for a weight: the product gemm_abt_weight and PackedWeight describe.
Product weight_product(MatrixView c, ConstMatrixView a, const WeightMatrix& w, float alpha, Accumulate accumulate) {
  return {c.data(), c.outerStride(), a.data(), a.outerStride(), w.data(), w.cols(), true, a.rows(), w.rows(), a.cols(),
          alpha, accumulate == Accumulate::yes, &w.panels()};
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

void gemm_abt_weight(MatrixView c, ConstMatrixView a, const WeightMatrix& b, float alpha, Accumulate accumulate) {
  if (a.cols() != b.cols() || c.rows() != a.rows() || c.cols() != b.rows())
    throw Error("gemm_abt: shapes do not fit: " + shape("c", c.rows(), c.cols()) + " = " + shape("a", a.rows(), a.cols()) +
                " · " + shape("weight", b.rows(), b.cols()) + "ᵀ");
  if (weight_product_precision() == Precision::bf16) return gemm_abt_weight_bf16(c, a, b, alpha, accumulate);
  run(weight_product(c, a, b, alpha, accumulate));
}

void gemm_ab_weight(MatrixView c, ConstMatrixView a, const WeightMatrix& b, float alpha, Accumulate accumulate) {
  if (a.cols() != b.rows() || c.rows() != a.rows() || c.cols() != b.cols())
    throw Error("gemm_ab: shapes do not fit: " + shape("c", c.rows(), c.cols()) + " = " + shape("a", a.rows(), a.cols()) +
                " · " + shape("weight", b.rows(), b.cols()));
  run({c.data(), c.outerStride(), a.data(), a.outerStride(), b.data(), b.cols(), false, a.rows(), b.cols(), a.cols(),
       alpha, accumulate == Accumulate::yes, &b.panels()});
}

PackedWeight::PackedWeight(const WeightMatrix& w, int slot) : w_(&w), kernel_(kernel_in_use().load(std::memory_order_relaxed)) {
  if (slot < 0 || slot >= kWeightSlots) throw Error("PackedWeight: slot " + std::to_string(slot) + " out of range");
  bf16_ = weight_product_precision() == Precision::bf16;
  if (bf16_ || w.rows() == 0 || w.cols() == 0) return;
  thread_local Buffer slots[kWeightSlots];
  // The weight's product with no rows of a: only b's side of it is read here.
  const Product g{nullptr, 0, nullptr, 0, w.data(), w.cols(), true, 0, w.rows(), w.cols(), 1.0f, false, &w.panels()};
  Panels panels{};
  b_panels_for(g, kernel_, gemm_detail::kernel_info(kernel_), slots[slot], panels);
  panels_ = panels.b;
  n_padded_ = panels.n_padded;
}

void PackedWeight::product(MatrixView c, ConstMatrixView a, Accumulate accumulate) const {
  const WeightMatrix& w = *w_;
  if (a.cols() != w.cols() || c.rows() != a.rows() || c.cols() != w.rows())
    throw Error("gemm_abt: shapes do not fit: " + shape("c", c.rows(), c.cols()) + " = " + shape("a", a.rows(), a.cols()) +
                " · " + shape("weight", w.rows(), w.cols()) + "ᵀ");
  if (bf16_) return gemm_abt_weight_bf16_here(c, a, w, accumulate);
  const Product g = weight_product(c, a, w, 1.0f, accumulate);
  if (trivial(g)) return;
  const KernelInfo kern = gemm_detail::kernel_info(kernel_);
  Panels panels{};
  panels.m_padded = round_up(g.m, kern.mr);
  panels.a = pack_a_here(g, kern, panels.m_padded);
  panels.b = panels_;
  panels.n_padded = n_padded_;
  run_tiles(g, kern, panels, 1);
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
