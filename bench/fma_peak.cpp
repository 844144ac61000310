// vitattn_fma_peak: the FMA peak of one core of this CPU, measured (a benchmark helper for
// bench/run_packing_bench.py, not a test): independent chains of vector FMAs, enough of them to
// hide the latency, for AVX2 (8 lanes) and, where the CPU has it, AVX-512 (16 lanes), and
// AVX512-BF16's dot product (vdpbf16ps: per float lane, two bf16 products added to it), the
// peak of bf16 products with float accumulation (bench/dnnl_products.cpp's bf16 runs).
// Prints one JSON line: GFLOP/s per core (2 flops per lane per FMA, 4 per lane per bf16 dot
// product) for each; 0 for what the CPU lacks. Timed in this thread's CPU seconds, not wall: on
// a machine shared with other work a run's wall time holds the time slices others took, and
// the best of five short runs does not always find one that was left alone.
#include <immintrin.h>

#include <time.h>

#include <algorithm>
#include <cstdio>

namespace {

constexpr long kIterations = 100'000'000;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <class F>
double best_seconds(F f) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const double t0 = thread_cpu_seconds();
    f();
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return best;
}

// 12 accumulators × 8 lanes per iteration; the sum is printed so nothing is optimised away.
__attribute__((target("avx2,fma"))) float avx2_chains(float seed) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(seed + static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < kIterations / 12; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float out = 0.0f;
  for (int i = 0; i < 12; ++i) out += _mm256_cvtss_f32(acc[i]);
  return out;
}

__attribute__((target("avx512f"))) float avx512_chains(float seed) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < kIterations / 24; ++it)
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  float out = 0.0f;
  for (int i = 0; i < 24; ++i) out += _mm512_cvtss_f32(acc[i]);
  return out;
}

// vdpbf16ps: acc (16 floats) += a.lo·b.lo + a.hi·b.hi over 32 bf16 pairs.
__attribute__((target("avx512f,avx512bf16"))) float bf16_chains(float seed) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
  for (long it = 0; it < kIterations / 24; ++it)
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  float out = 0.0f;
  for (int i = 0; i < 24; ++i) out += _mm512_cvtss_f32(acc[i]);
  return out;
}

}  // namespace

int main() {
  volatile float sink = 0.0f;
  __builtin_cpu_init();
  const double flops_per_run = 2.0 * static_cast<double>(kIterations / 12 * 12);
  const double avx2 = 8 * flops_per_run / best_seconds([&] { sink = sink + avx2_chains(1.0f); }) / 1e9;
  double avx512 = 0.0;
  if (__builtin_cpu_supports("avx512f")) {
    const double flops512 = 2.0 * static_cast<double>(kIterations / 24 * 24);
    avx512 = 16 * flops512 / best_seconds([&] { sink = sink + avx512_chains(1.0f); }) / 1e9;
  }
  double bf16 = 0.0;
  if (__builtin_cpu_supports("avx512bf16")) {
    const double flops_bf16 = 4.0 * static_cast<double>(kIterations / 24 * 24);
    bf16 = 16 * flops_bf16 / best_seconds([&] { sink = sink + bf16_chains(1.0f); }) / 1e9;
  }
  std::printf("{\"avx2_gflops_per_core\": %.2f, \"avx512_gflops_per_core\": %.2f, \"avx512_bf16_gflops_per_core\": %.2f}\n",
              avx2, avx512, bf16);
  return 0;
}
