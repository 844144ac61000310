#include "gemm_kernels_bf16.hpp"

#include <atomic>
#include <bit>

#include "cpu_features.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VITATTN_X86_BF16 1
#include <immintrin.h>
#endif

// Compiled for the baseline ISA like gemm_kernels.cpp: the kernel alone carries the AVX512-BF16
// target attribute and runs only after cpu_runs_bf16() said yes.
namespace vitattn::gemm_detail {
namespace {

std::atomic<bool> g_hidden{false};

#ifdef VITATTN_X86_BF16
// 12×32: per q, two B vectors of 16 pairs (32 columns) and one broadcast pair per row.
__attribute__((target("avx512f,avx512bf16"))) void kernel_bf16_avx512(std::ptrdiff_t pairs, const std::uint32_t* a,
                                                                      const std::uint32_t* b, float* c,
                                                                      std::ptrdiff_t ldc, bool load_c) {
  constexpr int mr = kBf16Mr;
  __m512 acc[mr][2];
#pragma GCC unroll 12
  for (int i = 0; i < mr; ++i) {
    acc[i][0] = load_c ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    acc[i][1] = load_c ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::ptrdiff_t q = 0; q < pairs; ++q, a += mr, b += kBf16Nr) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
#pragma GCC unroll 12
    for (int i = 0; i < mr; ++i) {
      const __m512bh ai = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);  // + high halves' product, round; + low halves', round
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < mr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

// 16 pairs per step: 32 floats rounded by vcvtne2ps2bf16 (element j of the result is x[j]'s bf16,
// so each dword holds x[2d] low, x[2d+1] high), each dword's halves swapped to put x[2d] high
// (masked shifts: GCC 12 warns -Wmaybe-uninitialized on the unmasked ones' undefined source).
__attribute__((target("avx512f,avx512bf16"))) std::ptrdiff_t pack_row_pairs_avx512(const float* x, std::ptrdiff_t k,
                                                                                  std::ptrdiff_t pairs, float alpha,
                                                                                  std::uint32_t* out,
                                                                                  std::ptrdiff_t stride) {
  const __m512 scale = _mm512_set1_ps(alpha);
  const __m512i zero = _mm512_setzero_si512();
  alignas(64) std::uint32_t block[16];
  std::ptrdiff_t q = 0;
  for (; q + 16 <= pairs && 2 * q + 32 <= k; q += 16) {
    const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(x + 2 * q), scale);
    const __m512 hi = _mm512_mul_ps(_mm512_loadu_ps(x + 2 * q + 16), scale);
    const __m512i rounded = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
    const __m512i high = _mm512_mask_slli_epi32(zero, 0xffff, rounded, 16);
    const __m512i low = _mm512_mask_srli_epi32(zero, 0xffff, rounded, 16);
    _mm512_store_si512(block, _mm512_or_si512(high, low));
    for (int d = 0; d < 16; ++d) out[(q + d) * stride] = block[d];
  }
  return q;
}
#endif

}  // namespace

void pack_row_pairs(const float* x, std::ptrdiff_t k, std::ptrdiff_t pairs, float alpha, std::uint32_t* out,
                    std::ptrdiff_t stride) {
  std::ptrdiff_t q = 0;
#ifdef VITATTN_X86_BF16
  q = pack_row_pairs_avx512(x, k, pairs, alpha, out, stride);
#endif
  for (; q < pairs; ++q) {
    const std::ptrdiff_t p = 2 * q;
    out[q * stride] = bf16_pair(alpha * x[p], p + 1 < k ? alpha * x[p + 1] : 0.0f);
  }
}

std::uint16_t to_bf16(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t exponent = u & 0x7f80'0000u, mantissa = u & 0x007f'ffffu;
  if (exponent == 0x7f80'0000u && mantissa != 0) return static_cast<std::uint16_t>(u >> 16 | 0x0040u);  // quiet NaN
  if (exponent == 0) return static_cast<std::uint16_t>(u >> 16 & 0x8000u);  // ±0, subnormals: a zero of x's sign
  const std::uint32_t lsb = u >> 16 & 1u;  // ties go to the even neighbour
  return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);  // an overflow carries into ±inf, as it should
}

void kernel_bf16(std::ptrdiff_t pairs, const std::uint32_t* a_panel, const std::uint32_t* b_panel, float* c,
                 std::ptrdiff_t ldc, bool load_c) {
#ifdef VITATTN_X86_BF16
  kernel_bf16_avx512(pairs, a_panel, b_panel, c, ldc, load_c);
#else
  (void)pairs, (void)a_panel, (void)b_panel, (void)c, (void)ldc, (void)load_c;
#endif
}

bool cpu_runs_bf16() {
  if (g_hidden.load(std::memory_order_relaxed)) return false;
  return cpu_has_avx512_bf16();
}

void hide_cpu_bf16(bool hidden) { g_hidden.store(hidden); }

}  // namespace vitattn::gemm_detail
