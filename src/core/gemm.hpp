#pragma once
// The matrix products of the forward, with the same bytes whatever the thread count, the
// tiling or the SIMD width.
//
// Every output element is one chain of fused multiply-adds over k in ascending order,
// starting from c's own value (a bias or the residual already there, or 0):
//   c_ij ← fma(α·a_i,k−1, b_k−1,j, … fma(α·a_i1, b_1j, fma(α·a_i0, b_0j, c_ij)))
// FMA is correctly rounded, so that chain has one result, and the AVX-512 and AVX2 kernels
// produce it alike; how C is cut into tiles and handed to threads cannot change it. A CPU
// without FMA gets a portable kernel (a·b, then + c), which may differ in the last bits.
// Where an operand sits does not matter either: a and b are copied into aligned panels before
// any kernel reads them, so they need only float alignment, and a weight read in place from a
// file's mapping (weight_matrix.hpp) gives the bytes its copy would.
// A weight (a WeightMatrix) is packed once, on its second product, and its panels kept beside it
// (packed_panels.hpp): they are the values the per-product packing would copy, so the bytes do
// not depend on which path ran. a is packed once per product, before any tile.
// With set_gemm_precision(Precision::bf16), the weight products x·Wᵀ go to gemm_bf16.hpp instead
// (bf16 values, float sums, its own fixed chain), but for those a caller keeps in float32
// (KeepFloat32 there); every other product stays as above.
// Why not OpenBLAS: its kernels and its split of the work depend on the thread count and on
// the kernel the environment picks (OPENBLAS_CORETYPE), and so did the outputs.
#include <concepts>
#include <string>
#include <vector>

#include "tensor.hpp"
#include "weight_matrix.hpp"

namespace vitattn {

// Whether the product is added onto what c holds (a bias, the residual) or replaces it.
enum class Accumulate : bool { no = false, yes = true };

// c (m, n) [+]= α·a (m, k) · bᵀ (k, n), with b stored (n, k): x·Wᵀ for nn.Linear weights
// W (out, in), and q·kᵀ. α scales a's entries (one rounding each) before the chain.
// c must not overlap a or b.
void gemm_abt(MatrixView c, ConstMatrixView a, ConstMatrixView b, float alpha = 1.0f,
              Accumulate accumulate = Accumulate::no);

// c (m, n) [+]= α·a (m, k) · b (k, n): attention weights · v, rollout's layer products.
// c must not overlap a or b.
void gemm_ab(MatrixView c, ConstMatrixView a, ConstMatrixView b, float alpha = 1.0f,
             Accumulate accumulate = Accumulate::no);

// The same products with b a weight, whose panels are packed once and kept with it from its
// second product on (packed_panels.hpp; one form per kernel and orientation): x·Wᵀ in the
// forward, d·W in the gradient. Same bytes as the views above. Templates only so that a Matrix argument, which
// converts to both a view and a WeightMatrix, still picks the view: a WeightMatrix picks these.
void gemm_abt_weight(MatrixView c, ConstMatrixView a, const WeightMatrix& b, float alpha, Accumulate accumulate);
void gemm_ab_weight(MatrixView c, ConstMatrixView a, const WeightMatrix& b, float alpha, Accumulate accumulate);
template <class W>
  requires std::same_as<W, WeightMatrix>
void gemm_abt(MatrixView c, ConstMatrixView a, const W& b, float alpha = 1.0f, Accumulate accumulate = Accumulate::no) {
  gemm_abt_weight(c, a, b, alpha, accumulate);
}
template <class W>
  requires std::same_as<W, WeightMatrix>
void gemm_ab(MatrixView c, ConstMatrixView a, const W& b, float alpha = 1.0f, Accumulate accumulate = Accumulate::no) {
  gemm_ab_weight(c, a, b, alpha, accumulate);
}

// The micro-kernels. The choice is made once from the CPU (never from the environment);
// tests force each one in turn.
enum class GemmKernel { portable, avx2_fma, avx512 };

std::vector<GemmKernel> available_gemm_kernels();  // what this CPU runs; portable always
GemmKernel best_gemm_kernel();                      // the default: AVX-512, else AVX2+FMA, else portable
GemmKernel gemm_kernel();                           // the one in use
void set_gemm_kernel(GemmKernel kernel);            // throws Error when this CPU cannot run it
std::string gemm_kernel_name(GemmKernel kernel);

// A weight's panels for x·Wᵀ products that one parallel step cuts by rows, each range on one
// thread (a row block of the MLP runs fc1, GELU and fc2 with no barrier between them): the
// panels are made once, here, before the tasks, and every range reads them. From the weight's
// second step on they are the panels kept with it (packed_panels.hpp), counted as gemm_abt
// counts a product; before that they are packed into a buffer of the constructing thread, one
// per `slot` (0 … kWeightSlots − 1), reused by the next PackedWeight of that slot on that thread:
// the weights that one step reads together need distinct slots. The kernel is fixed here, and
// so is the precision (gemm_bf16.hpp): the one the constructing thread's weight products take
// (weight_product_precision), since the ranges run on other threads, outside its KeepFloat32
// scopes; a bf16 weight is packed by the bf16 product itself, from its panels kept with the
// weight. product() gives the bytes gemm_abt gives with the weight at that precision: a row's
// chains do not depend on which rows share its call.
class PackedWeight {
 public:
  static constexpr int kWeightSlots = 4;
  // A multiple of every kernel's register rows: row ranges cut at multiples of it fill every
  // register tile but the last.
  static constexpr std::ptrdiff_t kRowQuantum = 24;
  PackedWeight(const WeightMatrix& w, int slot);
  // c (m, n) [+]= a (m, k) · wᵀ (k, n), all of it on the calling thread. c must not overlap a.
  void product(MatrixView c, ConstMatrixView a, Accumulate accumulate) const;

 private:
  const WeightMatrix* w_;
  const float* panels_ = nullptr;
  std::ptrdiff_t n_padded_ = 0;
  GemmKernel kernel_;
  bool bf16_ = false;
};

// Threads one product may use (the caller is one of them), default 1. Each product is cut
// into the same tiles whatever this is, so it changes the speed and never the bytes.
void set_gemm_threads(int threads);
int gemm_threads();

}  // namespace vitattn
