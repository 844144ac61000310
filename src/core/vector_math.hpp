#pragma once
// exp and erf over a row at the CPU's vector width, and the row-wise layers built on them:
// softmax (attention.hpp; three passes: the maximum, exp and the sum, the scale), quick-GELU
// and GELU's tanh and erf forms (layers.hpp).
//
// Why hand-written, and not Eigen's vectorised exp: Eigen picks its packet width at compile
// time, per translation unit, and src/core is compiled for baseline x86-64, so its packets are
// SSE (4 floats) even on an AVX-512 CPU. Compiling an Eigen translation unit with -mavx2 or
// -mavx512f is no way out: Eigen's inline templates would be instantiated there with the wider
// instructions, and the linker may keep that copy for the baseline code too (one definition
// per inline function), an illegal instruction on an older CPU. So the AVX2+FMA and AVX-512F
// variants are intrinsics in functions of their own with a target attribute, run only after
// __builtin_cpu_supports said yes, as the GEMM's micro-kernels (gemm_kernels.cpp). The core
// stays Eigen and the standard library only: no vector maths library.
//
// The exp of both vector variants: n = round(x/ln 2), r = x − n·ln 2 (ln 2 in two parts,
// fused), exp(r) = 1 + r + r²·P(r) with P a degree-4 polynomial fitted for relative error on
// |r| ≤ ln 2 / 2, times 2ⁿ applied as two exact powers of two so that results below FLT_MIN
// round once into the subnormals and results above FLT_MAX become +∞. Its error stays under
// 1 ulp of the exact value over a dense sweep of the floats from −104 to 89 (every 97th bit
// pattern, and every float near FLT_MIN: tests/unit/vector_math_test.cpp); exactly
// exp(−∞) = +0, exp(+∞) = +∞, exp(NaN) = NaN. Every step is per lane and the same operation in
// both variants, so AVX2 and AVX-512 give the same bytes; a row's sum is 16 partial sums
// (element i into sum i mod 16, in ascending i) added in one fixed tree, in both variants, so
// that too does not depend on the vector width, and never on the thread count (a row is one
// thread's). The portable variant (any CPU) is the code that was there before: Eigen's exp for
// softmax, std::exp for quick-GELU, std::tanh for the tanh GELU, Eigen's erf for the erf GELU;
// it may differ from the vector ones in the last bits.
#include <cstddef>
#include <string>
#include <vector>

namespace vitattn {

// The variants. The choice is made once from the CPU (never from the environment); tests
// force each one in turn.
enum class VectorIsa { portable, avx2_fma, avx512 };

std::vector<VectorIsa> available_vector_isas();  // what this CPU runs; portable always
VectorIsa best_vector_isa();                      // the default: AVX-512, else AVX2+FMA, else portable
VectorIsa vector_isa();                           // the one in use
void set_vector_isa(VectorIsa isa);               // throws Error when this CPU cannot run it
std::string vector_isa_name(VectorIsa isa);

// y[i] = exp(x[i]) for i < n; y may be x.
void exp_row(const float* x, float* y, std::ptrdiff_t n);

// One row of n scores, in place: exp(x − max) / Σ exp(x − max), the sum in the fixed order
// above. A row whose maximum is not finite (all −∞: fully masked) becomes zeros; a −∞ entry
// of any other row becomes exactly 0.
void softmax_row(float* row, std::ptrdiff_t n);

// One row of n values, in place: x·σ(1.702x) = x / (1 + exp(−1.702x)) (CLIP's QuickGELU).
void quick_gelu_row(float* row, std::ptrdiff_t n);

// One row of n values, in place: GELU's tanh form ½x(1 + tanh(y)), y = √(2/π)(x + 0.044715x³),
// computed by the vector variants as x / (1 + exp(−2y)), the same function without tanh (and
// without the cancellation of 1 + tanh(y) for y < 0); the portable one calls std::tanh.
void tanh_gelu_row(float* row, std::ptrdiff_t n);

// y[i] = erf(x[i]) for i < n; y may be x. The vector variants: two polynomial pieces
// (vector_math.cpp), within 2 ulp of the exact value over the test's sweep; ±∞ → ±1, NaN → NaN.
void erf_row(const float* x, float* y, std::ptrdiff_t n);

// One row of n values, in place: GELU's erf form ½x(1 + erf(x/√2)). The vector variants take
// 1 + erf(z) for z < 0 as erfc(|z|) directly, without the cancellation of 1 + erf(z).
void erf_gelu_row(float* row, std::ptrdiff_t n);

// gate[i] = Φ(x[i]) = ½(1 + erf(x[i]/√2)), the factor erf_gelu_row multiplies x by, the same
// bits: for the LRP identity rule (lrp.cpp), which must hand on what the forward's GELU did.
void erf_gelu_gate_row(const float* x, float* gate, std::ptrdiff_t n);

}  // namespace vitattn
