#include "parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace vitattn {
namespace {

// True on a thread while it runs one of the pool's tasks.
thread_local bool t_in_task = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // False when another thread holds the pool: the caller then runs the tasks itself.
  bool run(int n_tasks, int helpers, const std::function<void(int)>& task) {
    std::unique_lock call(call_mutex_, std::try_to_lock);
    if (!call.owns_lock()) return false;
    grow(helpers);
    helpers = std::min(helpers, static_cast<int>(workers_.size()));
    {
      std::lock_guard lock(mutex_);
      task_ = &task;
      n_tasks_ = n_tasks;
      next_.store(0, std::memory_order_relaxed);
      invited_ = helpers;
      finished_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    start_.notify_all();
    run_tasks();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ == invited_; });  // no helper still reads task_ after this
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) {
      try {
        workers_.emplace_back([this, index = static_cast<int>(workers_.size())] { worker(index); });
      } catch (const std::system_error&) {
        return;  // no more threads to be had: run with those there are
      }
    }
  }

  void worker(int index) {
    std::uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= invited_) continue;  // this call wants fewer threads
      lock.unlock();
      run_tasks();
      lock.lock();
      if (++finished_ == invited_) done_.notify_one();
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

  std::mutex call_mutex_;  // one parallel call at a time
  std::mutex mutex_;       // guards what follows, except next_
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int n_tasks_ = 0;
  std::atomic<int> next_{0};
  int invited_ = 0, finished_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace

void parallel_for(int n_tasks, int threads, const std::function<void(int)>& task) {
  if (n_tasks <= 0) return;
  const int helpers = std::min(threads, n_tasks) - 1;
  static Pool pool;
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
    if (pool.run(n_tasks, helpers, run_marked)) return;
  }
  for (int t = 0; t < n_tasks; ++t) task(t);
}

}  // namespace vitattn
