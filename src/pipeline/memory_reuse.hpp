#pragma once

namespace vitattn::pipeline {

// Lets malloc keep the large buffers a batch frees (decoded image, upsampled map, overlay, PNG
// stream) and hand them to the next image, instead of returning them to the kernel and faulting
// fresh zeroed pages in for every image: that page-fault work was a large share of a seeded batch's
// CPU time (bench/run_bench.sh; the figures are in docs/performance.md). A worker's memory stays at
// its largest image, as before; nothing else changes. Call once, before any thread starts.
// Here, below the CLI, so that vitattn's main and the benchmark helpers (bench/) set the
// allocator alike and a benchmark's forward pays for fresh pages what the command's pays.
void reuse_freed_memory();

}  // namespace vitattn::pipeline
