#include "batch_runner.hpp"

#include <atomic>
#include <exception>
#include <new>
#include <opencv2/core.hpp>
#include <thread>

#include "core/error.hpp"
#include "io/file_io.hpp"

namespace vitattn::cli {

BatchResult run_batch(const std::vector<io::ImageJob>& jobs, int workers,
                      const std::function<void(const io::ImageJob&)>& work, Progress& progress) {
  std::atomic<std::size_t> next{0}, written{0}, failed{0};
  auto worker = [&] {
    // Jobs are claimed one at a time, so memory holds at most one image per worker.
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      std::string error;
      try {
        work(jobs[i]);
      } catch (const Error& e) {
        error = e.what();  // already names the file
      } catch (const cv::Exception& e) {
        error = io::display(jobs[i].input) + ": " + e.err;
      } catch (const std::bad_alloc&) {
        error = io::display(jobs[i].input) + ": out of memory";
      } catch (const std::exception& e) {
        error = io::display(jobs[i].input) + ": " + e.what();
      }
      if (error.empty()) {
        ++written;
      } else {
        ++failed;
        progress.error(error);
      }
      progress.advance(error.empty());
    }
  };
  const auto n = static_cast<std::size_t>(workers < 1 ? 1 : workers);
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < std::min(n, jobs.size()); ++t) pool.emplace_back(worker);
    worker();  // the calling thread works too
  }  // jthreads join here
  return {written.load(), failed.load()};
}

}  // namespace vitattn::cli
