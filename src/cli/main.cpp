#include "app.hpp"
#include "blas_threads.hpp"
#include "pipeline/memory_reuse.hpp"

int main(int argc, char** argv) {
  vitattn::cli::stop_idle_blas_threads();
  vitattn::pipeline::reuse_freed_memory();
  return vitattn::cli::run(argc, argv);
}
