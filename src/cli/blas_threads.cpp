#include "blas_threads.hpp"

#include <dlfcn.h>

namespace vitattn::cli {

void stop_idle_blas_threads() {
  using Shutdown = int (*)();
  // Looked up, not linked: vitattn has no link dependency on OpenBLAS.
  if (const auto shutdown = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) shutdown();
}

}  // namespace vitattn::cli
