#pragma once
// A small pool of threads for the core's products (std::thread only, no OpenMP: nothing
// below depends on an OpenMP runtime's settings, and ThreadSanitizer sees every sync: the
// pool hands work over through std::atomic and waits through std::condition_variable).
//
// A call wakes the workers and waits for them (fork/join), handing the call over through one
// atomic word. A waiter (a worker between calls, the caller at the join) may spin before it
// blocks, so that the next call finds it awake: one budget after any call, another while a
// ParallelTeam is alive (one forward). Both budgets are zero today (parallel_for.cpp says why:
// on a shared machine a spinner loses to blocking). Spinning only changes when a worker
// starts, never which tasks there are, so it changes no result.
#include <functional>

namespace vitattn {

// Runs task(0) … task(n_tasks − 1), each exactly once, on up to `threads` threads, the
// caller being one of them, and returns when all are done. Which thread runs which task is
// not fixed, so each task's result must not depend on it. When another thread is already
// using the pool, the tasks run on the caller alone; so does a call from inside a task (the
// pool is busy with the outer call). The first exception a task throws is rethrown here,
// after every task has stopped.
void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task);

// While one lives, the pool's workers (up to threads − 1 of them, started here) wait between
// calls with the team's spin budget instead of the default one: for a burst of parallel calls
// separated by short serial stretches, such as the steps of one forward. A worker still
// blocks once a stretch runs past the budget, so a caller that stops calling leaves no thread
// burning a core. Scopes may nest and may live on several threads at once.
class ParallelTeam {
 public:
  explicit ParallelTeam(int threads);
  ~ParallelTeam();
  ParallelTeam(const ParallelTeam&) = delete;
  ParallelTeam& operator=(const ParallelTeam&) = delete;

 private:
  bool active_ = false;
};

}  // namespace vitattn
