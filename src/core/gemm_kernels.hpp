#pragma once
// The micro-kernels behind gemm.hpp (internal to the core). Each computes one register tile
// of C from packed panels of A and B, as a chain of multiply-adds over k in ascending order.
#include <cstddef>

#include "gemm.hpp"

namespace vitattn::gemm_detail {

// c (mr, nr), row stride ldc, starting from c's values (load_c) or from 0:
//   for p in 0 … kc−1: c_ij ← c_ij + a_panel[p·mr + i] · b_panel[p·nr + j]
// (fused in the FMA kernels). b_panel is 64-byte aligned.
using MicroKernel = void (*)(std::ptrdiff_t kc, const float* a_panel, const float* b_panel, float* c,
                             std::ptrdiff_t ldc, bool load_c);

struct KernelInfo {
  int mr = 0, nr = 0;  // register tile: rows of A, columns of B per call
  MicroKernel run = nullptr;
};

inline constexpr int kMaxMr = 12, kMaxNr = 32;  // the largest tile of any kernel

KernelInfo kernel_info(GemmKernel kernel);

// One column panel of op(b) from b stored (n, k), a transposing copy:
//   out[p·nr + j] = b[j·ldb + p] for j < w, 0 for w ≤ j < nr, p < kc.
// 8×8 AVX transposes where the CPU has AVX2, else scalar; only copies, so the same bytes.
void pack_transposed(const float* b, std::ptrdiff_t ldb, std::ptrdiff_t w, std::ptrdiff_t kc, int nr, float* out);
bool cpu_runs(GemmKernel kernel);

}  // namespace vitattn::gemm_detail
