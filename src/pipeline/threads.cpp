#include "pipeline/threads.hpp"

#include <opencv2/core.hpp>

#include "core/gemm.hpp"

namespace vitattn::pipeline {

void set_library_threads(int threads_per_worker) {
  cv::setNumThreads(threads_per_worker <= 1 ? 0 : threads_per_worker);  // 0: OpenCV runs serially
  // The core's products: the thread count changes their speed, never their bytes (gemm.hpp).
  set_gemm_threads(threads_per_worker < 1 ? 1 : threads_per_worker);
}

LibraryThreadsFor::LibraryThreadsFor(int threads, int after) : after_(after) { set_library_threads(threads); }

LibraryThreadsFor::~LibraryThreadsFor() { set_library_threads(after_); }

}  // namespace vitattn::pipeline
