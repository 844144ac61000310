#pragma once
// A weight matrix rearranged once into the GEMM kernel's column panels (gemm.hpp), kept beside
// the weights (weight_matrix.hpp) so every product of every image reads the same panels
// instead of packing them again per row tile.
//
// Packed lazily, on the second product that reads the weight in a given form, under std::call_once:
// a checkpoint whose weights are read in place from a file mapping would pay a copy of every weight
// at load if it were packed there, and a version query, a layout check or a model whose forward
// never runs would pay it for nothing. The first product packs into a buffer of its own, reused by
// the next products (no new pages): the kept copy is fresh memory, whose page faults and zeroing
// cost a one-image run more than its products save (docs/performance.md, "Weights packed once"), so
// only a weight read again, a second image's forward, is kept. Then once, whichever thread gets
// there first; the others wait for it.
//
// The panel layout depends on the kernel (its nr) and on which way the product reads the
// matrix (x·Wᵀ in the forward, d·W in the gradient), so the cache keeps one form per
// (kernel, orientation): a test that switches kernels gets panels for the kernel it runs. The
// bf16 products (gemm_bf16.hpp) keep their forms here too, one per orientation, after the float
// ones: the weight rounded to bf16 once, in pairs along k.
// The panels hold exactly the values the per-product packing would copy, so the bytes of a
// product do not depend on which path fed its kernel.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace vitattn {

// op(b) (k, n) as panels of nr columns, k cut in chunks of `depth`:
//   data[p0·n_padded + j0·kc + p·nr + j] = op(b)(p0 + p, j0 + j), kc = min(depth, k − p0),
// columns past n are 0; 64-byte aligned.
struct PackedPanels {
  std::shared_ptr<float[]> data;
  std::ptrdiff_t k = 0, n = 0, n_padded = 0;
  int nr = 0;
  std::shared_ptr<std::uint32_t[]> pairs;  // a bf16 form's values instead of data (gemm_kernels_bf16.hpp)
};

// The forms of one weight matrix, each made at most once.
class PanelCache {
 public:
  static constexpr int kBf16Forms = 6;             // the float forms: 3 kernels × 2 orientations; then bf16's
  static constexpr int kForms = kBf16Forms + 2;    // bf16: × 2 orientations
  // Whether this is at least the second product reading this form (counts the reads).
  bool read_before(int form) {
    std::atomic<int>& uses = uses_[static_cast<std::size_t>(form)];
    return uses.load(std::memory_order_relaxed) > 0 || uses.fetch_add(1, std::memory_order_relaxed) > 0;
  }
  template <class Make>
  const PackedPanels& get(int form, Make make) {
    std::call_once(once_[static_cast<std::size_t>(form)], [&] { forms_[static_cast<std::size_t>(form)] = make(); });
    return forms_[static_cast<std::size_t>(form)];
  }

 private:
  std::array<std::once_flag, kForms> once_;
  std::array<PackedPanels, kForms> forms_;
  std::array<std::atomic<int>, kForms> uses_{};
};

}  // namespace vitattn
