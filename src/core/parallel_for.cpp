#include "parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace vitattn {
namespace {

// Waiters block at once, without spinning first: a spinner that catches the next call skips a
// wake-up, but one that blocks is woken with the scheduler's preference for woken threads, which
// a spinner loses when other processes want the cores, and a spin's CPU counts against the
// process's share. On this project's shared 2-core machine every spin tried (short or long,
// with or without yields, between any two calls or only within one forward) made the 2-thread
// forward slower than blocking at once (docs/performance.md).

// True on a thread while it runs one of the pool's tasks.
thread_local bool t_in_task = false;

// A call's ticket, one atomic word, so that a worker reads the generation and how many
// workers it invites together: generation << kInviteBits | invited.
constexpr int kInviteBits = 16;
constexpr std::uint64_t kInviteMask = (std::uint64_t{1} << kInviteBits) - 1;

class Pool {
 public:
  ~Pool() {
    stop_.store(true, std::memory_order_release);
    wake(start_);
    for (std::thread& t : workers_) t.join();
  }

  // False when another thread holds the pool: the caller then runs the tasks itself.
  bool run(int n_tasks, int helpers, const std::function<void(int)>& task) {
    std::unique_lock call(call_mutex_, std::try_to_lock);
    if (!call.owns_lock()) return false;
    grow(helpers);
    helpers = std::min({helpers, static_cast<int>(workers_.size()), static_cast<int>(kInviteMask)});
    // No worker reads these now: the previous call's invited workers have all finished, the
    // others never read them. The ticket's release store publishes them.
    task_ = &task;
    n_tasks_ = n_tasks;
    next_.store(0, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    ++generation_;
    ticket_.store((generation_ << kInviteBits) | static_cast<std::uint64_t>(helpers), std::memory_order_release);
    wake(start_);
    run_tasks();
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == helpers; };
    {
      std::unique_lock lock(mutex_);
      done_.wait(lock, all_done);  // no worker reads task_ after this
    }
    std::exception_ptr error;
    {
      std::lock_guard lock(mutex_);
      error = std::exchange(error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  // With call_mutex_ held.
  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) {
      try {
        workers_.emplace_back([this, index = static_cast<int>(workers_.size()), seen = generation_] { worker(index, seen); });
      } catch (const std::system_error&) {
        return;  // no more threads to be had: run with those there are
      }
    }
  }

  // Wakes the threads blocked on `cv`. Taking the mutex orders this after a waiter's check of
  // its condition (made under the mutex), so no wake-up falls between its check and its wait.
  void wake(std::condition_variable& cv) {
    { std::lock_guard lock(mutex_); }
    cv.notify_all();
  }

  void worker(int index, std::uint64_t seen) {
    for (;;) {
      std::uint64_t ticket = 0;
      const auto news = [&] {
        ticket = ticket_.load(std::memory_order_acquire);
        return stop_.load(std::memory_order_acquire) || (ticket >> kInviteBits) != seen;
      };
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, news);
      }
      if (stop_.load(std::memory_order_acquire)) return;
      seen = ticket >> kInviteBits;
      const int invited = static_cast<int>(ticket & kInviteMask);
      if (index >= invited) continue;  // this call wants fewer threads
      run_tasks();
      if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == invited) wake(done_);
    }
  }

  void run_tasks() {
    for (;;) {
      const int t = next_.fetch_add(1, std::memory_order_relaxed);
      if (t >= n_tasks_) return;
      try {
        (*task_)(t);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  std::mutex call_mutex_;      // one parallel call at a time; guards workers_, generation_, task_, n_tasks_
  std::mutex mutex_;           // guards error_; the blocking side of start_ and done_
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  std::uint64_t generation_ = 0;
  const std::function<void(int)>* task_ = nullptr;
  int n_tasks_ = 0;
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<int> next_{0}, finished_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task) {
  if (n_tasks <= 0) return;
  const int helpers = std::min(threads, n_tasks) - 1;
  // A task that itself calls parallel_for (a head's products inside the heads' loop) runs
  // that inner loop on its own thread: the pool is busy with the outer one, and the caller's
  // thread already holds it.
  if (helpers > 0 && !t_in_task) {
    const auto run_marked = [&task](int t) {
      struct Mark {  // cleared however the task ends, a throw included
        Mark() { t_in_task = true; }
        ~Mark() { t_in_task = false; }
      } mark;
      task(t);
    };
    if (pool().run(n_tasks, helpers, run_marked)) return;
  }
  for (int t = 0; t < n_tasks; ++t) task(t);
}

}  // namespace vitattn
