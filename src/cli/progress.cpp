#include "progress.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace vitattn::cli {

// One image needs no bar; one video does (its frames), so the bar waits for add_frames.
Progress::Progress(std::size_t total, bool enabled) : total_(total), enabled_(enabled) {}

Progress::~Progress() { finish(); }

void Progress::advance(bool ok) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (!ok) ++failed_;
  draw_locked(done_ == total_);
}

void Progress::add_frames(std::size_t n) {
  std::lock_guard lock(mutex_);
  frames_total_ += n;
  draw_locked(true);
}

void Progress::frame_done() {
  std::lock_guard lock(mutex_);
  ++frames_done_;
  draw_locked(false);
}

void Progress::error(const std::string& message) {
  std::lock_guard lock(mutex_);
  clear_locked();
  spdlog::error(message);
  draw_locked(true);
}

void Progress::warn(const std::string& message) {
  std::lock_guard lock(mutex_);
  clear_locked();
  spdlog::warn(message);
  draw_locked(true);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  clear_locked();
  enabled_ = false;
}

void Progress::clear_locked() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

void Progress::draw_locked(bool force) {
  if (!enabled_ || (total_ <= 1 && frames_total_ == 0)) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;  // redraw ≤ 10×/s
  last_draw_ = now;
  constexpr std::size_t width = 30;
  // One input: its frames fill the bar; a batch: its inputs do.
  const std::size_t filled = total_ <= 1 && frames_total_ ? width * std::min(frames_done_, frames_total_) / frames_total_
                             : total_                      ? width * done_ / total_
                                                           : width;
  std::string bar(filled, '#');
  bar.append(width - filled, '.');
  std::fprintf(stderr, "\r\033[K[%s] %zu/%zu images", bar.c_str(), done_, total_);
  if (frames_total_) std::fprintf(stderr, ", %zu/%zu frames", frames_done_, frames_total_);
  if (failed_) std::fprintf(stderr, ", %zu failed", failed_);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace vitattn::cli
