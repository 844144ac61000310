#include "threads.hpp"

#include <opencv2/core.hpp>

#ifdef VITATTN_OPENBLAS
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace vitattn::io {

void set_library_threads(int threads_per_worker) {
  cv::setNumThreads(threads_per_worker <= 1 ? 0 : threads_per_worker);  // 0: OpenCV runs serially
#ifdef VITATTN_OPENBLAS
  openblas_set_num_threads(threads_per_worker < 1 ? 1 : threads_per_worker);
#endif
}

}  // namespace vitattn::io
