#include "hub_fetch.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "hub/hf_model.hpp"

namespace vitattn::cli {

std::filesystem::path fetch_hf_model(const std::string& model, int verbosity) {
  io::HubSettings hub = io::hub_settings_from_env();
  if (verbosity >= 0 && ::isatty(STDERR_FILENO)) {
    // One line redrawn in place, at most ten times a second.
    auto last = std::chrono::steady_clock::time_point();
    hub.progress = [last](const std::string& file, std::uint64_t done, std::uint64_t total) mutable {
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
  const io::HfModelFiles files = io::resolve_hf_model(model, hub);
  if (files.downloaded) spdlog::info("{}: downloaded to {}", model, files.weights.parent_path().string());
  else spdlog::debug("{}: from the Hugging Face cache, commit {}", model, files.commit);
  return files.weights;
}

}  // namespace vitattn::cli
