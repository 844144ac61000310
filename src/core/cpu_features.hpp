#pragma once
// What this CPU, with its operating system, can run: the one place that asks, for the GEMM's
// micro-kernels (gemm_kernels.cpp), the bf16 products (gemm_kernels_bf16.cpp) and the vector
// maths (vector_math.cpp). libgcc's checks include the OS's XSAVE support for the wider
// registers. Every answer is false on a CPU that is not x86 or a compiler that is not GCC-like:
// those run the portable code.
namespace vitattn {

bool cpu_has_avx2_fma();     // AVX2 and FMA
bool cpu_has_avx512f();      // AVX-512 Foundation
bool cpu_has_avx512_bf16();  // AVX-512 Foundation and AVX512-BF16 (vdpbf16ps)

}  // namespace vitattn
