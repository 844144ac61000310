#pragma once
// A small pool of threads for the core's products (std::thread only, no OpenMP: nothing
// below depends on an OpenMP runtime's settings, and ThreadSanitizer sees every sync: the
// pool hands work over through std::atomic and waits through std::condition_variable).
//
// A call wakes the workers and waits for them (fork/join). Waking a blocked thread and
// waiting for it to block again costs a system call each way, about what a small layer costs;
// a forward makes dozens of calls in a row. So a worker that finishes its share spins for a
// while before it blocks, and the next call finds it awake: briefly after any call, longer
// while a ParallelTeam is alive (one forward). Spinning only changes when a worker starts,
// never which tasks there are, so it changes no result.
#include <functional>

namespace vitattn {

// Runs task(0) … task(n_tasks − 1), each exactly once, on up to `threads` threads, the
// caller being one of them, and returns when all are done. Which thread runs which task is
// not fixed, so each task's result must not depend on it. When another thread is already
// using the pool, the tasks run on the caller alone; so does a call from inside a task (the
// pool is busy with the outer call). The first exception a task throws is rethrown here,
// after every task has stopped.
void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task);

// While one lives, the pool's workers (up to threads − 1 of them, started here) keep spinning
// between the calls instead of blocking after each: for a burst of parallel calls separated by
// short serial stretches, such as the layers of one forward. A worker still blocks once a
// stretch runs past a bound, so a caller that stops calling leaves no thread burning a core
// for long. Scopes may nest and may live on several threads at once.
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
