#include "run_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "standard_output.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::ok: return "ok";
    case RunStatus::failed: return "failed";
    case RunStatus::skipped: return "skipped";
  }
  return "?";
}

}  // namespace

std::string log_line(const fs::path& path, RunStatus status, const std::string& error,
                     const std::vector<fs::path>& outputs, std::int64_t ms) {
  nlohmann::ordered_json line;
  line["path"] = path.string();
  line["status"] = status_name(status);
  line["error"] = error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(error);
  line["outputs"] = nlohmann::ordered_json::array();
  for (const fs::path& p : outputs) line["outputs"].push_back(p.string());
  line["ms"] = ms;
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

RunLog::RunLog(const std::string& path, pipeline::OutputSet outputs)
    : path_(path), owned_(path != "-"), outputs_(std::move(outputs)) {
  fd_ = owned_ ? ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : STDOUT_FILENO;
  if (fd_ < 0) throw Error(fmt::format("--log-json {}: cannot write: {}", files::display(path), std::strerror(errno)));
}

RunLog::~RunLog() {
  if (owned_ && fd_ >= 0) ::close(fd_);
}

void RunLog::fail(int error_number) {
  if (failed_) return;
  failed_ = true;
  if (!owned_) {
    standard_output_failed("the log (--log-json -)", error_number);
    return;
  }
  spdlog::error("--log-json {}: cannot write: {}; no more lines are written to it", files::display(path_),
                std::strerror(error_number));
}

bool RunLog::failed() const {
  const std::lock_guard lock(mutex_);
  return failed_;
}

bool RunLog::close() {
  const std::lock_guard lock(mutex_);
  if (owned_ && fd_ >= 0) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) fail(errno);
  }
  return !failed_;
}

void RunLog::write(const std::string& line) {
  const std::lock_guard lock(mutex_);
  if (failed_ || fd_ < 0) return;
  // One write(2) per line: a reader or a kill between two calls sees whole lines only. A
  // short write is finished so the line stays whole. A write that fails (a full disk) is
  // said once and ends the log, never the images: they go on and are written.
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail(n < 0 ? errno : ENOSPC);
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void RunLog::finished(const pipeline::InputJob& job, const std::string& error, double ms) {
  const auto whole_ms = static_cast<std::int64_t>(std::llround(ms));
  if (error.empty()) write(log_line(job.input, RunStatus::ok, {}, pipeline::output_paths(job.output_base, outputs_, job.video), whole_ms));
  else write(log_line(job.input, RunStatus::failed, error, {}, whole_ms));
}

void RunLog::already_done(const std::vector<pipeline::InputJob>& jobs) {
  std::string lines;
  for (const pipeline::InputJob& job : jobs)
    lines += log_line(job.input, RunStatus::skipped, {}, pipeline::output_paths(job.output_base, outputs_, job.video), 0);
  write(lines);
}

void RunLog::not_started(const std::vector<pipeline::InputJob>& jobs, std::size_t n, const std::string& reason) {
  const std::string why = "not started: " + reason;
  std::string lines;
  for (std::size_t i = jobs.size() - std::min(n, jobs.size()); i < jobs.size(); ++i)
    lines += log_line(jobs[i].input, RunStatus::skipped, why, {}, 0);
  write(lines);
}

}  // namespace vitattn::cli
