#include "vector_math.hpp"

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // Array::erf, the portable variant's
#include <atomic>
#include <cmath>

#include "attention.hpp"
#include "cpu_features.hpp"
#include "error.hpp"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define VITATTN_X86_VECTOR 1
// GCC 12's AVX-512 intrinsics pass an undefined register as the unused source of their
// unmasked forms, which its flow analysis reports as uninitialised; silenced for these
// headers only (the warning is reported at their lines).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC warning; clang knows no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

// This file is compiled for the baseline ISA like the rest of the core. The AVX2 and AVX-512
// functions carry their own target attribute and run only after cpu_features.hpp said
// yes (through cpu_runs), so the binary runs on any x86-64.
namespace vitattn {
namespace {

constexpr float kTanhGeluK = 0.797884560802865356f;  // √(2/π)

// ---- portable: the code the core had before, for any CPU ----

void softmax_row_portable(float* values, std::ptrdiff_t n) {
  Eigen::Map<Eigen::ArrayXf> row(values, n);
  const float row_max = row.maxCoeff();
  if (!std::isfinite(row_max)) {  // fully masked row: attend to nothing
    row.setZero();
    return;
  }
  if (row.minCoeff() == kMasked) {  // some entry is masked (−inf is the least value); vectorised, unlike any()
    // Eigen's vectorised exp clamps its argument, so exp(−inf) comes out as a denormal,
    // not 0: masked entries are zeroed explicitly so that a mask means exactly 0.
    row = (row == kMasked).select(0.0f, (row - row_max).exp());
  } else {
    row = (row - row_max).exp();  // the common, unmasked case: one vectorised pass
  }
  row *= 1.0f / row.sum();
}

void quick_gelu_row_portable(float* values, std::ptrdiff_t n) {
  Eigen::Map<Eigen::ArrayXf> a(values, n);
  a = a / (1.0f + (-1.702f * a).unaryExpr([](float t) { return std::exp(t); }));
}

void tanh_gelu_row_portable(float* values, std::ptrdiff_t n) {
  Eigen::Map<Eigen::ArrayXf> a(values, n);
  // std::tanh, not Eigen's fast vectorised tanh: on the CIFAR-10 test model the fast one
  // triples the logits' error against PyTorch (9.5e-6 against 3.3e-6).
  a = 0.5f * a * (1.0f + (kTanhGeluK * (a + 0.044715f * a.cube())).unaryExpr([](float t) { return std::tanh(t); }));
}

void erf_gelu_row_portable(float* values, std::ptrdiff_t n) {
  Eigen::Map<Eigen::ArrayXf> a(values, n);
  a = 0.5f * a * (1.0f + (a * static_cast<float>(M_SQRT1_2)).erf());
}

void erf_gelu_gate_row_portable(const float* x, float* gate, std::ptrdiff_t n) {
  Eigen::Map<const Eigen::ArrayXf> a(x, n);
  Eigen::Map<Eigen::ArrayXf>(gate, n) = 0.5f * (1.0f + (a * static_cast<float>(M_SQRT1_2)).erf());
}

void erf_row_portable(const float* x, float* y, std::ptrdiff_t n) {
  Eigen::Map<const Eigen::ArrayXf> in(x, n);
  Eigen::Map<Eigen::ArrayXf> out(y, n);
  out = in.erf();
}

void exp_row_portable(const float* x, float* y, std::ptrdiff_t n) {
  for (std::ptrdiff_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

#ifdef VITATTN_X86_VECTOR

// ---- exp's constants, the same for both vector variants ----
// Inputs are clamped to [kExpLo, kExpHi] first: below kExpLo exp rounds to 0 (exp(kExpLo) is
// under half the least subnormal 2⁻¹⁴⁹), above kExpHi to +∞ (over FLT_MAX), and the clamp keeps
// n = round(x/ln 2) within [−150, 129], where both halves of 2ⁿ are normal floats. NaN passes
// the clamp (max and min return their second operand, x, when one is NaN).
constexpr float kExpLo = -104.0f, kExpHi = 89.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;          // 9 significant bits: n·kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln 2 − kLn2Hi
// exp(r) ≈ 1 + r + r²·(c0 + c1·r + c2·r² + c3·r³ + c4·r⁴) on |r| ≤ ln 2 / 2: a fit of
// (exp(r) − 1 − r)/r² for least maximum error relative to exp(r) (well under 0.1 ulp; the
// float roundings of the evaluation make the rest of the error).
constexpr float kC0 = 0.49999994f, kC1 = 0.16666521f, kC2 = 0.04166839f, kC3 = 0.00836871f, kC4 = 0.0013814613f;

// erf, two pieces split at |z| = kErfSplit:
//   |z| < kErfSplit:  erf(z) = z + z·A(z²), A of degree 5 fitted to erf(z)/z − 1 for least
//                     relative error (the last step one fused z·A + z, so that A's rounding
//                     hardly shows);
//   |z| ≥ kErfSplit:  erf(z) = ±(1 − erfc(|z|)), erfc(|z|) = exp(B(|z| − kErfSplit)), B of
//                     degree 9 fitted to log erfc on [kErfSplit, kErfTop]; beyond kErfTop erfc is
//                     under half an ulp of 1, so |z| is clamped there and erf comes out ±1.
// For GELU, 1 + erf(z) is then erfc(|z|) itself for z ≤ −kErfSplit (no cancellation), 0 below
// −kErfTop (erf is −1 in float there, as PyTorch's float GELU has it), 2 − erfc(z) above.
constexpr float kErfSplit = 0.875f, kErfTop = 3.93f;
constexpr float kErfA[6] = {0.12837915f, -0.37612551f, 0.11282455f, -0.026791466f, 0.0050321864f, -0.00062032795f};
constexpr float kErfB[10] = {-1.5328244f,     -2.4302204f,       -0.82653302f,     -0.046937689f, 0.011426892f,
                             -0.0022971083f,  0.00034621777f,    -3.3655808e-05f,  1.4961884e-06f, 9.2353680e-09f};

// Element i of a row goes into partial sum i mod 16; the 16 are added in this tree, so a
// row's sum is the same in both variants.
float sum_of_lanes(float (&lanes)[16]) {
  for (int width = 8; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

// ---- AVX2 + FMA: 8 floats a register, 16 a step (two registers: lanes 0-7 and 8-15) ----

__attribute__((target("avx2,fma"))) inline __m256 exp_avx2(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(kExpHi), _mm256_max_ps(_mm256_set1_ps(kExpLo), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);  // exact
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kC4), r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC0));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r), _mm256_set1_ps(1.0f));
  // 2ⁿ as 2^n1 · 2^n2, each a normal float, applied one after the other: the first product is
  // exact, the second rounds once (into the subnormals, or to +∞, where the result lies).
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

// Lanes [0, k) of a register set, for k in [0, 8] (k ≥ 8: all).
__attribute__((target("avx2"))) inline __m256i lanes_below(std::ptrdiff_t k) {
  const int kk = static_cast<int>(k < 0 ? 0 : (k > 8 ? 8 : k));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(kk), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) void exp_row_avx2(const float* x, float* y, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_avx2(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(y + i, m, exp_avx2(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx2,fma"))) void softmax_row_avx2(float* row, std::ptrdiff_t n) {
  const __m256 neg_inf = _mm256_set1_ps(kMasked);
  __m256 mx = neg_inf;
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(row + i));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    mx = _mm256_max_ps(mx, _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(row + i, m), _mm256_castsi256_ps(m)));
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, mx);
  float row_max = lanes[0];
  for (int j = 1; j < 8; ++j) row_max = lanes[j] > row_max ? lanes[j] : row_max;
  if (!std::isfinite(row_max)) {  // fully masked row: attend to nothing
    for (std::ptrdiff_t j = 0; j < n; ++j) row[j] = 0.0f;
    return;
  }
  const __m256 vmax = _mm256_set1_ps(row_max);
  __m256 sum_lo = _mm256_setzero_ps(), sum_hi = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 e_lo = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + i), vmax));
    const __m256 e_hi = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + i + 8), vmax));
    _mm256_storeu_ps(row + i, e_lo);
    _mm256_storeu_ps(row + i + 8, e_hi);
    sum_lo = _mm256_add_ps(sum_lo, e_lo);
    sum_hi = _mm256_add_ps(sum_hi, e_hi);
  }
  if (i < n) {  // the last 1-15: lanes past n add 0, which leaves a partial sum as it was
    const __m256i m_lo = lanes_below(n - i), m_hi = lanes_below(n - i - 8);
    const __m256 e_lo = exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(row + i, m_lo), vmax));
    const __m256 e_hi = exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(row + i + 8, m_hi), vmax));
    _mm256_maskstore_ps(row + i, m_lo, e_lo);
    _mm256_maskstore_ps(row + i + 8, m_hi, e_hi);
    sum_lo = _mm256_add_ps(sum_lo, _mm256_and_ps(e_lo, _mm256_castsi256_ps(m_lo)));
    sum_hi = _mm256_add_ps(sum_hi, _mm256_and_ps(e_hi, _mm256_castsi256_ps(m_hi)));
  }
  _mm256_store_ps(lanes, sum_lo);
  _mm256_store_ps(lanes + 8, sum_hi);
  const __m256 scale = _mm256_set1_ps(1.0f / sum_of_lanes(lanes));
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, _mm256_mul_ps(_mm256_loadu_ps(row + i), scale));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(row + i, m, _mm256_mul_ps(_mm256_maskload_ps(row + i, m), scale));
  }
}

__attribute__((target("avx2,fma"))) inline __m256 quick_gelu_avx2(__m256 x) {
  const __m256 t = exp_avx2(_mm256_mul_ps(_mm256_set1_ps(-1.702f), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}

__attribute__((target("avx2,fma"))) void quick_gelu_row_avx2(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, quick_gelu_avx2(_mm256_loadu_ps(row + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(row + i, m, quick_gelu_avx2(_mm256_maskload_ps(row + i, m)));
  }
}

// ½x(1 + tanh(y)) = x / (1 + exp(−2y)), y = √(2/π)(x + 0.044715x³) rounded as the portable form
// computes it. 1 + tanh(y) as 1 − 2/(exp(2y) + 1) would cancel for y < 0 and lose tanh's
// relative accuracy near 0; the sigmoid form has neither: its one sum 1 + exp(−2y) is ≥ 1.
__attribute__((target("avx2,fma"))) inline __m256 tanh_gelu_avx2(__m256 x) {
  const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 y = _mm256_mul_ps(_mm256_set1_ps(kTanhGeluK), _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps(0.044715f), cube)));
  const __m256 t = exp_avx2(_mm256_mul_ps(_mm256_set1_ps(-2.0f), y));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}

__attribute__((target("avx2,fma"))) void tanh_gelu_row_avx2(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, tanh_gelu_avx2(_mm256_loadu_ps(row + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(row + i, m, tanh_gelu_avx2(_mm256_maskload_ps(row + i, m)));
  }
}

// erf(z) = z + z·A(z²) for |z| < kErfSplit (small), and erfc(|z|) for the rest (large).
struct ErfParts256 {
  __m256 erf_small, erfc_large, small, negative, beyond;
};

__attribute__((target("avx2,fma"))) inline ErfParts256 erf_parts_avx2(__m256 z) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign_bit, z);
  const __m256 z2 = _mm256_mul_ps(z, z);
  __m256 p = _mm256_set1_ps(kErfA[5]);
  for (int k = 4; k >= 0; --k) p = _mm256_fmadd_ps(p, z2, _mm256_set1_ps(kErfA[k]));
  const __m256 u = _mm256_sub_ps(_mm256_min_ps(_mm256_set1_ps(kErfTop), a), _mm256_set1_ps(kErfSplit));  // NaN passes
  __m256 q = _mm256_set1_ps(kErfB[9]);
  for (int k = 8; k >= 0; --k) q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(kErfB[k]));
  return {_mm256_fmadd_ps(z, p, z), exp_avx2(q), _mm256_cmp_ps(a, _mm256_set1_ps(kErfSplit), _CMP_LT_OQ),
          _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ), _mm256_cmp_ps(a, _mm256_set1_ps(kErfTop), _CMP_GT_OQ)};
}

__attribute__((target("avx2,fma"))) inline __m256 erf_avx2(__m256 z) {
  const ErfParts256 e = erf_parts_avx2(z);
  const __m256 sign = _mm256_and_ps(_mm256_set1_ps(-0.0f), z);
  const __m256 large = _mm256_or_ps(sign, _mm256_sub_ps(_mm256_set1_ps(1.0f), e.erfc_large));
  return _mm256_blendv_ps(large, e.erf_small, e.small);
}

// Φ(x) = ½(1 + erf(x/√2)), x/√2 rounded as the portable form computes it; GELU is x·Φ(x).
__attribute__((target("avx2,fma"))) inline __m256 erf_gelu_gate_avx2(__m256 x) {
  const ErfParts256 e = erf_parts_avx2(_mm256_mul_ps(x, _mm256_set1_ps(static_cast<float>(M_SQRT1_2))));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 below = _mm256_andnot_ps(e.beyond, e.erfc_large);  // z ≤ −kErfSplit: erfc(|z|), 0 past kErfTop
  const __m256 large = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), e.erfc_large), below, e.negative);
  const __m256 one_plus_erf = _mm256_blendv_ps(large, _mm256_add_ps(one, e.erf_small), e.small);
  return _mm256_mul_ps(_mm256_set1_ps(0.5f), one_plus_erf);
}

__attribute__((target("avx2,fma"))) inline __m256 erf_gelu_avx2(__m256 x) { return _mm256_mul_ps(x, erf_gelu_gate_avx2(x)); }

__attribute__((target("avx2,fma"))) void erf_gelu_gate_row_avx2(const float* x, float* gate, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, erf_gelu_gate_avx2(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(gate + i, m, erf_gelu_gate_avx2(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx2,fma"))) void erf_row_avx2(const float* x, float* y, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, erf_avx2(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(y + i, m, erf_avx2(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx2,fma"))) void erf_gelu_row_avx2(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, erf_gelu_avx2(_mm256_loadu_ps(row + i)));
  if (i < n) {
    const __m256i m = lanes_below(n - i);
    _mm256_maskstore_ps(row + i, m, erf_gelu_avx2(_mm256_maskload_ps(row + i, m)));
  }
}

// ---- AVX-512F: 16 floats a register; the same operations lane by lane ----

__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(kExpHi), _mm512_max_ps(_mm512_set1_ps(kExpLo), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);  // exact
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kC4), r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC0));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r), _mm512_set1_ps(1.0f));
  const __m512i ni = _mm512_cvtps_epi32(n);
  const __m512i n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
  return _mm512_mul_ps(_mm512_mul_ps(y, s1), s2);
}

inline __mmask16 first_lanes(std::ptrdiff_t k) {  // lanes [0, k), k in [0, 16)
  return static_cast<__mmask16>((1u << static_cast<unsigned>(k)) - 1u);
}

__attribute__((target("avx512f"))) void exp_row_avx512(const float* x, float* y, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp_avx512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp_avx512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

__attribute__((target("avx512f"))) void softmax_row_avx512(float* row, std::ptrdiff_t n) {
  const __m512 neg_inf = _mm512_set1_ps(kMasked);
  __m512 mx = neg_inf;
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(row + i));
  const __mmask16 tail = first_lanes(n - i);
  if (tail) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(neg_inf, tail, row + i));
  const float row_max = _mm512_reduce_max_ps(mx);
  if (!std::isfinite(row_max)) {  // fully masked row: attend to nothing
    for (std::ptrdiff_t j = 0; j < n; ++j) row[j] = 0.0f;
    return;
  }
  const __m512 vmax = _mm512_set1_ps(row_max);
  __m512 sum = _mm512_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + i), vmax));
    _mm512_storeu_ps(row + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + i), vmax));
    _mm512_mask_storeu_ps(row + i, tail, e);
    sum = _mm512_mask_add_ps(sum, tail, sum, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  const __m512 scale = _mm512_set1_ps(1.0f / sum_of_lanes(lanes));
  for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(row + i, _mm512_mul_ps(_mm512_loadu_ps(row + i), scale));
  if (tail) _mm512_mask_storeu_ps(row + i, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, row + i), scale));
}

__attribute__((target("avx512f"))) inline __m512 quick_gelu_avx512(__m512 x) {
  const __m512 t = exp_avx512(_mm512_mul_ps(_mm512_set1_ps(-1.702f), x));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), t));
}

__attribute__((target("avx512f"))) void quick_gelu_row_avx512(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(row + i, quick_gelu_avx512(_mm512_loadu_ps(row + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(row + i, m, quick_gelu_avx512(_mm512_maskz_loadu_ps(m, row + i)));
  }
}

__attribute__((target("avx512f"))) inline __m512 tanh_gelu_avx512(__m512 x) {
  const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 y = _mm512_mul_ps(_mm512_set1_ps(kTanhGeluK), _mm512_add_ps(x, _mm512_mul_ps(_mm512_set1_ps(0.044715f), cube)));
  const __m512 t = exp_avx512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), y));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), t));
}

__attribute__((target("avx512f"))) void tanh_gelu_row_avx512(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(row + i, tanh_gelu_avx512(_mm512_loadu_ps(row + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(row + i, m, tanh_gelu_avx512(_mm512_maskz_loadu_ps(m, row + i)));
  }
}

struct ErfParts512 {
  __m512 erf_small, erfc_large;
  __mmask16 small, negative, beyond;
};

__attribute__((target("avx512f"))) inline ErfParts512 erf_parts_avx512(__m512 z) {
  const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(0x7fffffff)));
  const __m512 z2 = _mm512_mul_ps(z, z);
  __m512 p = _mm512_set1_ps(kErfA[5]);
  for (int k = 4; k >= 0; --k) p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(kErfA[k]));
  const __m512 u = _mm512_sub_ps(_mm512_min_ps(_mm512_set1_ps(kErfTop), a), _mm512_set1_ps(kErfSplit));  // NaN passes
  __m512 q = _mm512_set1_ps(kErfB[9]);
  for (int k = 8; k >= 0; --k) q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(kErfB[k]));
  return {_mm512_fmadd_ps(z, p, z), exp_avx512(q), _mm512_cmp_ps_mask(a, _mm512_set1_ps(kErfSplit), _CMP_LT_OQ),
          _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_cmp_ps_mask(a, _mm512_set1_ps(kErfTop), _CMP_GT_OQ)};
}

__attribute__((target("avx512f"))) inline __m512 erf_avx512(__m512 z) {
  const ErfParts512 e = erf_parts_avx512(z);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  const __m512 magnitude = _mm512_sub_ps(_mm512_set1_ps(1.0f), e.erfc_large);
  const __m512 large = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(magnitude)));
  return _mm512_mask_blend_ps(e.small, large, e.erf_small);
}

__attribute__((target("avx512f"))) inline __m512 erf_gelu_gate_avx512(__m512 x) {
  const ErfParts512 e = erf_parts_avx512(_mm512_mul_ps(x, _mm512_set1_ps(static_cast<float>(M_SQRT1_2))));
  const __m512 below = _mm512_mask_blend_ps(e.beyond, e.erfc_large, _mm512_setzero_ps());
  const __m512 large = _mm512_mask_blend_ps(e.negative, _mm512_sub_ps(_mm512_set1_ps(2.0f), e.erfc_large), below);
  const __m512 one_plus_erf = _mm512_mask_blend_ps(e.small, large, _mm512_add_ps(_mm512_set1_ps(1.0f), e.erf_small));
  return _mm512_mul_ps(_mm512_set1_ps(0.5f), one_plus_erf);
}

__attribute__((target("avx512f"))) inline __m512 erf_gelu_avx512(__m512 x) { return _mm512_mul_ps(x, erf_gelu_gate_avx512(x)); }

__attribute__((target("avx512f"))) void erf_gelu_gate_row_avx512(const float* x, float* gate, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(gate + i, erf_gelu_gate_avx512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(gate + i, m, erf_gelu_gate_avx512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

__attribute__((target("avx512f"))) void erf_row_avx512(const float* x, float* y, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, erf_avx512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(y + i, m, erf_avx512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

__attribute__((target("avx512f"))) void erf_gelu_row_avx512(float* row, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(row + i, erf_gelu_avx512(_mm512_loadu_ps(row + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(row + i, m, erf_gelu_avx512(_mm512_maskz_loadu_ps(m, row + i)));
  }
}

#endif  // VITATTN_X86_VECTOR

// Whether this CPU runs `isa` (cpu_features.hpp asks it).
bool cpu_runs(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::portable: return true;
    case VectorIsa::avx2_fma: return cpu_has_avx2_fma();
    case VectorIsa::avx512: return cpu_has_avx512f();
  }
  return false;
}

std::atomic<VectorIsa>& isa_in_use() {
  static std::atomic<VectorIsa> isa{best_vector_isa()};
  return isa;
}

VectorIsa current() { return isa_in_use().load(std::memory_order_relaxed); }

}  // namespace

std::vector<VectorIsa> available_vector_isas() {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : {VectorIsa::portable, VectorIsa::avx2_fma, VectorIsa::avx512})
    if (cpu_runs(isa)) isas.push_back(isa);
  return isas;
}

VectorIsa best_vector_isa() {
  if (cpu_runs(VectorIsa::avx512)) return VectorIsa::avx512;
  if (cpu_runs(VectorIsa::avx2_fma)) return VectorIsa::avx2_fma;
  return VectorIsa::portable;
}

VectorIsa vector_isa() { return isa_in_use().load(); }

void set_vector_isa(VectorIsa isa) {
  if (!cpu_runs(isa)) throw Error("vector maths: this CPU cannot run the " + vector_isa_name(isa) + " variant");
  isa_in_use().store(isa);
}

std::string vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::portable: return "portable";
    case VectorIsa::avx2_fma: return "avx2+fma";
    case VectorIsa::avx512: return "avx512";
  }
  return "?";
}

void exp_row(const float* x, float* y, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return exp_row_avx512(x, y, n);
    case VectorIsa::avx2_fma: return exp_row_avx2(x, y, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  exp_row_portable(x, y, n);
}

void softmax_row(float* row, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return softmax_row_avx512(row, n);
    case VectorIsa::avx2_fma: return softmax_row_avx2(row, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  softmax_row_portable(row, n);
}

void quick_gelu_row(float* row, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return quick_gelu_row_avx512(row, n);
    case VectorIsa::avx2_fma: return quick_gelu_row_avx2(row, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  quick_gelu_row_portable(row, n);
}

void tanh_gelu_row(float* row, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return tanh_gelu_row_avx512(row, n);
    case VectorIsa::avx2_fma: return tanh_gelu_row_avx2(row, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  tanh_gelu_row_portable(row, n);
}

void erf_row(const float* x, float* y, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return erf_row_avx512(x, y, n);
    case VectorIsa::avx2_fma: return erf_row_avx2(x, y, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  erf_row_portable(x, y, n);
}

void erf_gelu_row(float* row, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return erf_gelu_row_avx512(row, n);
    case VectorIsa::avx2_fma: return erf_gelu_row_avx2(row, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  erf_gelu_row_portable(row, n);
}

void erf_gelu_gate_row(const float* x, float* gate, std::ptrdiff_t n) {
  switch (current()) {
#ifdef VITATTN_X86_VECTOR
    case VectorIsa::avx512: return erf_gelu_gate_row_avx512(x, gate, n);
    case VectorIsa::avx2_fma: return erf_gelu_gate_row_avx2(x, gate, n);
#else
    case VectorIsa::avx512:
    case VectorIsa::avx2_fma:
#endif
    case VectorIsa::portable: break;
  }
  erf_gelu_gate_row_portable(x, gate, n);
}

}  // namespace vitattn
