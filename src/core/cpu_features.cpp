#include "cpu_features.hpp"

namespace vitattn {

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpu_has_avx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

bool cpu_has_avx512_bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

#else

bool cpu_has_avx2_fma() { return false; }
bool cpu_has_avx512f() { return false; }
bool cpu_has_avx512_bf16() { return false; }

#endif

}  // namespace vitattn
