#include "memory_reuse.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace vitattn::pipeline {
namespace {

#if defined(__GLIBC__)
// The first 128 MiB of the main heap in transparent huge pages (madvise mode, Debian's
// default). The first touch of each 4 KiB page is a page fault, which a virtual machine makes
// dear; a short run (a seeded run on one small photo) touches thousands of pages (weights,
// image, maps), and their faults were a large share of its CPU. One fault per 2 MiB instead
// removes nearly all of them (docs/performance.md, start-up). The heap is reserved ahead
// (M_TOP_PAD) so that it has an area to advise; only what is touched becomes resident, 2 MiB
// at a time.
void heap_in_huge_pages() {
  constexpr std::size_t kReserve = std::size_t{128} << 20;
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  mallopt(M_TOP_PAD, static_cast<int>(kReserve));
  void* probe = std::malloc(std::size_t{256} << 10);  // from the heap (under the mmap threshold): grows it
  if (probe == nullptr) return;
  // From the 2 MiB boundary below the probe: what is allocated next starts there. A range that
  // begins before the heap gets ENOMEM, and the advice still holds for the heap's part.
  const auto lo = reinterpret_cast<std::uintptr_t>(probe) & ~(kHuge - 1);
  const auto hi = reinterpret_cast<std::uintptr_t>(::sbrk(0)) & ~(kHuge - 1);
  std::free(probe);
  // Only the range just reserved: under a sanitizer's allocator the probe is not in the brk heap.
  if (hi > lo && hi - lo <= kReserve + 2 * kHuge)
    ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // advice: failure changes nothing
}
#endif

}  // namespace

void reuse_freed_memory() {
#if defined(__GLIBC__)
  // Blocks up to 32 MiB (glibc's largest mmap threshold: a 2.7 MP image's float map) come from
  // the heap, and the heap's free top is not trimmed. Larger blocks are still mapped and
  // unmapped one by one. Same as GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:
  // glibc.malloc.trim_threshold=1073741824.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  heap_in_huge_pages();
#endif
}

}  // namespace vitattn::pipeline
