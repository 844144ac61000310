#include "gemm_kernels.hpp"

#include "cpu_features.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VITATTN_X86_KERNELS 1
#include <immintrin.h>
#endif

// This file is compiled for the baseline ISA like the rest. The AVX2 and AVX-512 kernels carry
// their own target attribute and run only after cpu_features.hpp said yes, so the binary
// runs on any x86-64 (no -march=native, no ISA flag that could leak into inline functions).
namespace vitattn::gemm_detail {
namespace {

// Any CPU: a·b rounded, then + c rounded (no FMA at the baseline ISA). 4×8 keeps the tile in
// SSE registers.
void kernel_portable(std::ptrdiff_t kc, const float* a, const float* b, float* c, std::ptrdiff_t ldc, bool load_c) {
  constexpr int mr = 4, nr = 8;
  float acc[mr][nr];
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) acc[i][j] = load_c ? c[i * ldc + j] : 0.0f;
  for (std::ptrdiff_t p = 0; p < kc; ++p, a += mr, b += nr)
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < nr; ++j) acc[i][j] += a[i] * b[j];
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) c[i * ldc + j] = acc[i][j];
}

#ifdef VITATTN_X86_KERNELS

// 6×16: 12 accumulators, two B vectors and one broadcast fill 15 of the 16 ymm registers.
__attribute__((target("avx2,fma"))) void kernel_avx2_fma(std::ptrdiff_t kc, const float* a, const float* b, float* c,
                                                         std::ptrdiff_t ldc, bool load_c) {
  constexpr int mr = 6;
  __m256 acc[mr][2];
#pragma GCC unroll 6
  for (int i = 0; i < mr; ++i) {
    acc[i][0] = load_c ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
    acc[i][1] = load_c ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
  }
  for (std::ptrdiff_t p = 0; p < kc; ++p, a += mr, b += 16) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < mr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);  // ai·b0 + acc, one rounding
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < mr; ++i) {
    _mm256_storeu_ps(c + i * ldc, acc[i][0]);
    _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
  }
}

// 12×32: 24 accumulators, two B vectors and one broadcast in the 32 zmm registers.
__attribute__((target("avx512f"))) void kernel_avx512(std::ptrdiff_t kc, const float* a, const float* b, float* c,
                                                     std::ptrdiff_t ldc, bool load_c) {
  constexpr int mr = 12;
  __m512 acc[mr][2];
#pragma GCC unroll 12
  for (int i = 0; i < mr; ++i) {
    acc[i][0] = load_c ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    acc[i][1] = load_c ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::ptrdiff_t p = 0; p < kc; ++p, a += mr, b += 32) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < mr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < mr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

// 8 rows of b (8 consecutive j) × 8 consecutive p, transposed through registers into 8 rows
// of the panel (8 consecutive p) × 8 consecutive j.
__attribute__((target("avx2"))) void transpose_8x8(const float* b, std::ptrdiff_t ldb, float* out, std::ptrdiff_t nr) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(b + i * ldb);
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);      // rows 2i, 2i+1 interleaved, p 0 1 | 4 5
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);  // p 2 3 | 6 7
  }
  for (int h = 0; h < 2; ++h) {  // rows 0-3 (h = 0) and 4-7 (h = 1)
    s[4 * h + 0] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(1, 0, 1, 0));      // p 0 | 4
    s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], _MM_SHUFFLE(3, 2, 3, 2));      // p 1 | 5
    s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(1, 0, 1, 0));  // p 2 | 6
    s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], _MM_SHUFFLE(3, 2, 3, 2));  // p 3 | 7
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(out + q * nr, _mm256_permute2f128_ps(s[q], s[4 + q], 0x20));
    _mm256_storeu_ps(out + (q + 4) * nr, _mm256_permute2f128_ps(s[q], s[4 + q], 0x31));
  }
}

__attribute__((target("avx2"))) void pack_transposed_avx2(const float* b, std::ptrdiff_t ldb, std::ptrdiff_t w,
                                                          std::ptrdiff_t kc, int nr, float* out) {
  std::ptrdiff_t j = 0;
  for (; j + 8 <= w; j += 8) {
    std::ptrdiff_t p = 0;
    for (; p + 8 <= kc; p += 8) transpose_8x8(b + j * ldb + p, ldb, out + p * nr + j, nr);
    for (; p < kc; ++p)
      for (std::ptrdiff_t i = 0; i < 8; ++i) out[p * nr + j + i] = b[(j + i) * ldb + p];
  }
  for (; j < nr; ++j)
    for (std::ptrdiff_t p = 0; p < kc; ++p) out[p * nr + j] = j < w ? b[j * ldb + p] : 0.0f;
}

#endif

void pack_transposed_scalar(const float* b, std::ptrdiff_t ldb, std::ptrdiff_t w, std::ptrdiff_t kc, int nr, float* out) {
  for (std::ptrdiff_t p = 0; p < kc; ++p)
    for (std::ptrdiff_t j = 0; j < nr; ++j) out[p * nr + j] = j < w ? b[j * ldb + p] : 0.0f;
}

}  // namespace

void pack_transposed(const float* b, std::ptrdiff_t ldb, std::ptrdiff_t w, std::ptrdiff_t kc, int nr, float* out) {
#ifdef VITATTN_X86_KERNELS
  static const bool avx2 = cpu_runs(GemmKernel::avx2_fma);
  if (avx2 && nr % 8 == 0) return pack_transposed_avx2(b, ldb, w, kc, nr, out);
#endif
  pack_transposed_scalar(b, ldb, w, kc, nr, out);
}

KernelInfo kernel_info(GemmKernel kernel) {
  switch (kernel) {
#ifdef VITATTN_X86_KERNELS
    case GemmKernel::avx512: return {12, 32, kernel_avx512};
    case GemmKernel::avx2_fma: return {6, 16, kernel_avx2_fma};
#else
    case GemmKernel::avx512:
    case GemmKernel::avx2_fma: break;
#endif
    case GemmKernel::portable: break;
  }
  return {4, 8, kernel_portable};
}

bool cpu_runs(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::portable: return true;
    case GemmKernel::avx2_fma: return cpu_has_avx2_fma();
    case GemmKernel::avx512: return cpu_has_avx512f();
  }
  return false;
}

}  // namespace vitattn::gemm_detail
