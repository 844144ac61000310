#include "hub_fetch.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "environment.hpp"
#include "hub/hf_model.hpp"

namespace vitattn::cli {
namespace {

// One line redrawn in place, at most ten times a second.
auto progress_bar() {
  auto last = std::chrono::steady_clock::time_point();
  return [last](const std::string& file, std::uint64_t done, std::uint64_t total) mutable {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(100) && done != total) return;
    last = now;
    constexpr int kWidth = 30;
    const int filled = total ? static_cast<int>(kWidth * static_cast<double>(done) / static_cast<double>(total)) : 0;
    std::fprintf(stderr, "\r%s [%-*s] %.1f/%.1f MB", file.c_str(), kWidth, std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
    if (done == total && total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

std::filesystem::path fetch(const std::string& name, int verbosity) {
  hub::HubSettings hub = hub_settings(process_environment);  // only now: a run without hf: needs no HOME
  if (verbosity >= 0 && ::isatty(STDERR_FILENO)) hub.progress = progress_bar();
  const hub::HfModelFiles files = hub::resolve_hf_model(name, hub);
  if (files.downloaded) spdlog::info("{}: downloaded to {}", name, files.weights.parent_path().string());
  else spdlog::debug("{}: from the Hugging Face cache, commit {}", name, files.commit);
  return files.weights;
}

}  // namespace

model::HubLocator hub_locator(int verbosity) {
  return [verbosity](const std::string& source) -> std::optional<std::filesystem::path> {
    if (!hub::is_hf_model(source)) return std::nullopt;
    return fetch(source, verbosity);
  };
}

}  // namespace vitattn::cli
