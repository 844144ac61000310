#pragma once
// A small pool of threads for the core's products (std::thread only, no OpenMP: nothing
// below depends on an OpenMP runtime's settings, and ThreadSanitizer sees every lock).
#include <functional>

namespace vitattn {

// Runs task(0) … task(n_tasks − 1), each exactly once, on up to `threads` threads, the
// caller being one of them, and returns when all are done. Which thread runs which task is
// not fixed, so each task's result must not depend on it. When another thread is already
// using the pool, the tasks run on the caller alone. The first exception a task throws is
// rethrown here, after every task has stopped.
void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task);

}  // namespace vitattn
