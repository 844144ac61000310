#include "batch_runner.hpp"

#include <spdlog/fmt/fmt.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <new>
#include <opencv2/core.hpp>
#include <thread>

#include "core/error.hpp"
#include "interrupt.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"

namespace vitattn::cli {

BatchResult run_batch(const std::vector<pipeline::InputJob>& jobs, int workers,
                      const std::function<void(const pipeline::InputJob&)>& work, Progress& progress,
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
        error = fmt::format("{}: {}", io::display(jobs[i].input), e.err);
      } catch (const std::bad_alloc&) {
        error = fmt::format("{}: out of memory", io::display(jobs[i].input));
      } catch (const std::exception& e) {
        error = fmt::format("{}: {}", io::display(jobs[i].input), e.what());
      }
      if (done) done(jobs[i], error, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
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
  BatchResult result{written.load(), failed.load(), 0};
  result.not_started = jobs.size() - result.written - result.failed;  // every claimed job ends written or failed
  return result;
}

// "3 images", "1 video", "2 images and 1 video": a video is one input, not one image.
static std::string count_inputs(std::size_t total, std::size_t videos) {
  if (videos == 0) return io::counted(total, "image", "images");
  if (videos == total) return io::counted(total, "video", "videos");
  return io::counted(total - videos, "image", "images") + " and " + io::counted(videos, "video", "videos");
}

std::string batch_summary(std::size_t total, std::size_t videos, SkipCounts skips, const BatchResult& r,
                          double seconds, const std::string& out, int signal) {
  const std::string skip =
      (skips.skipped ? fmt::format(", {} skipped (already done)", skips.skipped) : std::string()) +
      (skips.redone ? fmt::format(", {} redone (made with other settings)", skips.redone) : std::string());
  if (signal != 0)
    return fmt::format("interrupted by {} after {:.2f} s: {} of {} written to {}, {} failed, {} not started{}",
                       signal_name(signal), seconds, r.written, count_inputs(total, videos), out, r.failed,
                       r.not_started, skip);
  return fmt::format("{} in {:.2f} s: {} written to {}{}{}{}", count_inputs(total, videos), seconds, r.written, out,
                     r.failed ? fmt::format(", {} failed", r.failed) : std::string(),
                     r.not_started ? fmt::format(", {} not started", r.not_started) : std::string(), skip);
}

}  // namespace vitattn::cli
