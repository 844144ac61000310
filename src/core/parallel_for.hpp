#pragma once
// A small pool of threads for the core's products (std::thread only, no OpenMP: nothing
// below depends on an OpenMP runtime's settings, and ThreadSanitizer sees every sync: the
// pool hands work over through std::atomic and waits through std::condition_variable).
//
// A call wakes the workers and waits for them (fork/join), handing the call over through one
// atomic word; a waiter (a worker between calls, the caller at the join) blocks at once
// (parallel_for.cpp says why it does not spin).
#include <functional>

namespace vitattn {

// Runs task(0) … task(n_tasks − 1), each exactly once, on up to `threads` threads, the
// caller being one of them, and returns when all are done. Which thread runs which task is
// not fixed, so each task's result must not depend on it. When another thread is already
// using the pool, the tasks run on the caller alone; so does a call from inside a task (the
// pool is busy with the outer call). The first exception a task throws is rethrown here,
// after every task has stopped.
void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task);

}  // namespace vitattn
