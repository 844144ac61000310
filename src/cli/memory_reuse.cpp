#include "memory_reuse.hpp"

#include <malloc.h>

namespace vitattn::cli {

void reuse_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 32 MiB (glibc's largest mmap threshold: a 2.7 MP image's float map) come from
  // the heap, and the heap's free top is not trimmed. Larger blocks are still mapped and
  // unmapped one by one. Same as GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:
  // glibc.malloc.trim_threshold=1073741824.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace vitattn::cli
