#pragma once
// OpenBLAS comes into every vitattn process through OpenCV core's LAPACK (libopencv_core needs
// liblapack.so.3 → libopenblas), though vitattn multiplies with its own GEMM. When it is loaded it
// starts a worker thread per core that spins on sched_yield for about 2^28 cycles (its idle
// timeout) before it sleeps: CPU that a start which never calls BLAS spends for nothing, taken from
// the main thread on a busy machine (docs/performance.md, start-up). stop_idle_blas_threads joins
// them (OpenBLAS's own blas_thread_shutdown_, the handler it registers for fork); OpenBLAS starts
// them again by itself if anything calls it. A no-op when the loaded BLAS is not OpenBLAS.
namespace vitattn::cli {

void stop_idle_blas_threads();

}  // namespace vitattn::cli
