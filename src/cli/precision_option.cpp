#include "precision_option.hpp"

#include <string>

#include "core/error.hpp"

namespace vitattn::cli {

void use_precision(Precision precision) {
  if (!cpu_runs(precision))
    throw Error("--precision " + precision_name(precision) +
                ": this CPU has no AVX512-BF16 instructions (vdpbf16ps); use --precision fp32 (the default)");
  set_gemm_precision(precision);
}

}  // namespace vitattn::cli
