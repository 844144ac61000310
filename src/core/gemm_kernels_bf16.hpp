#pragma once
// The bf16 micro-kernel and its packing (internal to the core; the contract is gemm_bf16.hpp's).
//
// A packed pair is a uint32 holding two bf16 values: k's element 2q in the high 16 bits, 2q+1
// in the low 16 (0 past k). Panels hold pairs:
//   a panel (mr rows):   a_panel[q·mr + i] = pair of row i, k elements 2q and 2q+1
//   b panel (nr columns): b_panel[q·nr + j] = pair of column j (W's row j), the same k elements
#include <cstddef>
#include <cstdint>

namespace vitattn::gemm_detail {

inline constexpr int kBf16Mr = 12, kBf16Nr = 32;  // the register tile: 24 zmm accumulators

// x rounded to bf16 (nearest, ties to even; subnormal → signed zero; NaN → quiet NaN).
std::uint16_t to_bf16(float x);
inline std::uint32_t bf16_pair(float first, float second) {
  return static_cast<std::uint32_t>(to_bf16(first)) << 16 | to_bf16(second);
}

// c (kBf16Mr, kBf16Nr), row stride ldc, from c's values (load_c) or 0: for q in 0 … pairs−1,
// per element the high halves' product added and rounded, then the low halves'. b_panel is
// 64-byte aligned. Only after cpu_runs_bf16().
void kernel_bf16(std::ptrdiff_t pairs, const std::uint32_t* a_panel, const std::uint32_t* b_panel, float* c,
                 std::ptrdiff_t ldc, bool load_c);

// One row of x's pairs, α·x rounded: out[q·stride] = bf16_pair(α·x[2q], α·x[2q+1]) for q < pairs,
// with x[k] read as 0 when 2·pairs > k (odd k). The same values as bf16_pair, 32 at a time with
// vcvtne2ps2bf16 (whose rounding to_bf16 spells out). Only after cpu_runs_bf16().
void pack_row_pairs(const float* x, std::ptrdiff_t k, std::ptrdiff_t pairs, float alpha, std::uint32_t* out,
                    std::ptrdiff_t stride);

// AVX512-F and AVX512-BF16, and not hidden by a test.
bool cpu_runs_bf16();
// Tests: make cpu_runs_bf16() say no (true) or ask the CPU again (false), to see the refusal
// a CPU without the instructions gets.
void hide_cpu_bf16(bool hidden);

}  // namespace vitattn::gemm_detail
