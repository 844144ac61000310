#pragma once
// Thread budgets of the libraries underneath, so that -j workers do not each start
// their own pool and oversubscribe the cores.
namespace vitattn::pipeline {

// Each worker gets `threads_per_worker` threads for OpenCV and the matrix products.
void set_library_threads(int threads_per_worker);

// set_library_threads(threads) while it lives, then set_library_threads(after): for a stretch
// of work that runs its own threads side by side (a video's frames at once), each of which
// should use one thread, not a worker's budget.
class LibraryThreadsFor {
 public:
  LibraryThreadsFor(int threads, int after);
  ~LibraryThreadsFor();
  LibraryThreadsFor(const LibraryThreadsFor&) = delete;
  LibraryThreadsFor& operator=(const LibraryThreadsFor&) = delete;

 private:
  int after_;
};

}  // namespace vitattn::pipeline
