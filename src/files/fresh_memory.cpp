#include "files/fresh_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace vitattn::files {
namespace {

// Debian 12's headers know it; older ones may not (the kernel then refuses it: a hint lost).
#ifndef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = 23;
#else
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#endif

// Below this, the faults cost less than the two system calls.
constexpr std::size_t kMinBytes = std::size_t{64} << 10;

}  // namespace

void prefault_for_writing(void* data, std::size_t bytes) {
  if (data == nullptr || bytes < kMinBytes) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<std::uintptr_t>(data);
  // Only the pages wholly inside the buffer: the partial pages at its ends may belong to
  // another allocation, which a hint must not touch.
  const std::uintptr_t begin = (from + page - 1) / page * page, end = (from + bytes) / page * page;
  if (begin >= end) return;
  void* p = reinterpret_cast<void*>(begin);
  ::madvise(p, end - begin, MADV_HUGEPAGE);   // results ignored: hints only (see the header)
  ::madvise(p, end - begin, kPopulateWrite);
}

}  // namespace vitattn::files
