#pragma once
// Thread budgets of the libraries underneath, so that -j workers do not each start
// their own pool and oversubscribe the cores.
namespace vitattn::pipeline {

// Each worker gets `threads_per_worker` threads for OpenCV and the matrix products.
void set_library_threads(int threads_per_worker);

}  // namespace vitattn::pipeline
