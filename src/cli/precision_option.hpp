#pragma once
// --precision fp32 | bf16 (declared with the other options: options.hpp), the precision of the
// forward's weight products (core/gemm_bf16.hpp), on the image command, `forward` and `serve`.
#include "core/gemm_bf16.hpp"

namespace vitattn::cli {

// Sets the products' precision for the run. A CPU without AVX512-BF16 asked for bf16 is refused:
// throws Error naming --precision and what to use instead (no fallback: the bytes and the speed
// asked for, or a clear no).
void use_precision(Precision precision);

}  // namespace vitattn::cli
