#include "worker_pool.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <new>
#include <opencv2/core.hpp>
#include <thread>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::pipeline {

BatchCounts run_on_workers(const std::vector<InputJob>& jobs, int workers, const JobWork& work,
                           const std::function<bool()>& stop, const JobDone& done) {
  std::atomic<std::size_t> next{0}, written{0}, failed{0};
  auto worker = [&] {
    // Jobs are claimed one at a time, so memory holds at most one image per worker; the
    // stop request is checked before each claim, so a stopped batch starts nothing new.
    for (std::size_t i; !(stop && stop()) && (i = next.fetch_add(1)) < jobs.size();) {
      std::string error;
      const auto start = std::chrono::steady_clock::now();
      try {
        work(jobs[i]);
      } catch (const Error& e) {
        error = e.what();  // already names the file
      } catch (const cv::Exception& e) {
        error = fmt::format("{}: {}", files::display(jobs[i].input), e.err);
      } catch (const std::bad_alloc&) {
        error = fmt::format("{}: out of memory", files::display(jobs[i].input));
      } catch (const std::exception& e) {
        error = fmt::format("{}: {}", files::display(jobs[i].input), e.what());
      }
      if (done) done(jobs[i], error, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (error.empty()) ++written;
      else ++failed;
    }
  };
  const auto n = static_cast<std::size_t>(workers < 1 ? 1 : workers);
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < std::min(n, jobs.size()); ++t) pool.emplace_back(worker);
    worker();  // the calling thread works too
  }  // jthreads join here
  BatchCounts counts{written.load(), failed.load(), 0};
  counts.not_started = jobs.size() - counts.written - counts.failed;  // every claimed job ends written or failed
  return counts;
}

}  // namespace vitattn::pipeline
