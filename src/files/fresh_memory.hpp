#pragma once
// A freshly allocated buffer that is about to be written whole (a weight matrix filled from
// the file) is faulted in ahead, in one system call, on transparent huge pages where the
// kernel gives them.
//
// Why: touching fresh memory page by page costs one page fault per 4 KiB, and the faults, not the
// copy, were most of a model's load time (one for every 4 KiB of the weights, each a trap into the
// kernel that a virtual machine makes dearer; docs/performance.md, "Loading a model").
// MADV_HUGEPAGE lets the kernel back the buffer's whole 2 MiB ranges with one page each;
// MADV_POPULATE_WRITE (Linux 5.14) then maps every page in one pass instead of one trap per page.
// Both are hints: an older kernel, or a system with huge pages off, ignores them and the buffer
// faults in as before. Neither changes a byte the program sees, nor the memory it holds (the pages
// would be touched anyway).
#include <cstddef>

namespace vitattn::files {

// Prepares the whole pages inside [data, data + bytes); small buffers are left alone (a
// system call costs more than their few faults).
void prefault_for_writing(void* data, std::size_t bytes);

}  // namespace vitattn::files
