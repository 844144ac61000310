#include "gemm_kernels.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VITATTN_X86_KERNELS 1
#include <immintrin.h>
#endif

// This file is compiled for the baseline ISA like the rest. The AVX2 and AVX-512 kernels carry
// their own target attribute and run only after __builtin_cpu_supports said yes, so the binary
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

#endif

}  // namespace

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
#ifdef VITATTN_X86_KERNELS
    // libgcc's checks include the OS's XSAVE support for the wider registers.
    case GemmKernel::avx2_fma: __builtin_cpu_init(); return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::avx512: __builtin_cpu_init(); return __builtin_cpu_supports("avx512f");
#else
    case GemmKernel::avx2_fma:
    case GemmKernel::avx512: return false;
#endif
  }
  return false;
}

}  // namespace vitattn::gemm_detail
