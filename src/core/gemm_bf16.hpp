#pragma once
// The forward's weight products in bfloat16 (opt-in): x·Wᵀ with W a WeightMatrix, on a CPU
// with AVX512-BF16 (vdpbf16ps). Everything else stays float32: the products of two
// activations (the attention's Q·Kᵀ and A·V, which carry the maps themselves and are a small
// share of the work at ViT sizes), softmax, the norms, the heads' products through views, the
// whole backward (its products d·W never take this path; its gradients start from the bf16
// forward's activations, as the maps do), and the weight products a caller keeps in float32
// with KeepFloat32 below (vit.cpp: the patch embedding and the attention branch, whose rounding
// reaches the softmax's logits directly).
//
// What one product computes, c (m, n) [+]= α·a (m, k) · Wᵀ, W (n, k):
//   - W's values rounded to bf16 once, when its panels are packed (packed_panels.hpp keeps them
//     beside the weight, a form of their own); a's values α·a_ip (one float rounding) rounded
//     to bf16 when a is packed, per product. Rounding is to nearest, ties to even, as
//     vcvtne2ps2bf16 does: a subnormal float becomes a zero of its sign, NaN stays a (quiet) NaN.
//   - Each output element is one chain over k in ascending order, from c's own value (the bias
//     or residual there, or 0), accumulating in float:
//       c_ij ← (… ((c_ij + a_i0·w_j0) + a_i1·w_j1) … + a_i,k−1·w_j,k−1)
//     every + rounded to float once (to nearest even; a subnormal sum becomes 0). The product
//     of two bf16 values is exact in float, so each step is a correctly rounded fma too.
//     vdpbf16ps takes k two at a time: per float lane it adds the pair's high half's product,
//     rounds, then the low half's, rounds (Intel's SDM; checked against this chain, bit for
//     bit, by tests/unit/gemm_bf16_test.cpp), so k's element 2q sits in the high half and
//     2q+1 in the low half of each pair. An odd k gets a zero partner (a +0 term: c unchanged,
//     but a −0 sum becomes +0).
//   - k is cut into chunks whose running sum waits in C as a float, as a register would hold
//     it; C's tiles go to threads as they come. Neither the chunks, the tiles nor the thread
//     count enter the chain: the same bytes at any thread count on one machine.
// A CPU without AVX512-BF16 is refused (set_gemm_precision throws), not served by a slower
// emulation: one clear message rather than a silent fallback whose speed would surprise.
#include <string>

#include "gemm.hpp"
#include "weight_matrix.hpp"

namespace vitattn {

enum class Precision { fp32, bf16 };

// The precision of the weight products x·Wᵀ (gemm.hpp's gemm_abt with a WeightMatrix), for the
// whole process, default fp32. Throws Error when this CPU cannot run `precision`.
void set_gemm_precision(Precision precision);
Precision gemm_precision();
bool cpu_runs(Precision precision);  // fp32 always; bf16 with AVX512-F and AVX512-BF16
std::string precision_name(Precision precision);  // "fp32", "bf16"

// The bf16 product described above (gemm.cpp sends gemm_abt's weight products here when the
// precision is bf16; shapes already checked). Throws Error when the CPU cannot run it.
void gemm_abt_weight_bf16(MatrixView c, ConstMatrixView a, const WeightMatrix& w, float alpha, Accumulate accumulate);
// The same with α = 1, all of it on the calling thread (PackedWeight::product, whose row ranges
// are already one per thread).
void gemm_abt_weight_bf16_here(MatrixView c, ConstMatrixView a, const WeightMatrix& w, Accumulate accumulate);

// While one lives, this thread's weight products are float32 whatever the precision (scopes
// nest; each restores what it found). Per thread, as the choice of path is made by the thread
// that calls the product, before its tiles go to any worker.
class KeepFloat32 {
 public:
  KeepFloat32();
  ~KeepFloat32();
  KeepFloat32(const KeepFloat32&) = delete;
  KeepFloat32& operator=(const KeepFloat32&) = delete;

 private:
  bool outer_;
};
// The precision this thread's weight products take now: gemm_precision(), or fp32 inside a
// KeepFloat32.
Precision weight_product_precision();

}  // namespace vitattn
