#include "standard_output.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace vitattn::cli {
namespace {
std::atomic<bool> failed{false};
}  // namespace

void standard_output_failed(const std::string& what, int error_number) {
  if (failed.exchange(true)) return;
  spdlog::error("standard output: cannot write{}: {}", what.empty() ? "" : " " + what, std::strerror(error_number));
}

bool standard_output_has_failed() { return failed.load(); }

bool flush_standard_output() {
  errno = 0;
  std::cout.flush();
  const bool cpp_failed = std::cout.bad();
  const int cpp_errno = errno;
  errno = 0;
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  const int c_errno = errno;
  if (c_failed || cpp_failed) standard_output_failed("", c_errno ? c_errno : cpp_errno ? cpp_errno : EIO);
  return !standard_output_has_failed();
}

}  // namespace vitattn::cli
