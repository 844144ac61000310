#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal. Error lines
// go through it so that they do not get mixed into the bar.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace vitattn::cli {

class Progress {
 public:
  Progress(std::size_t total, bool enabled);
  ~Progress();
  void advance(bool ok);                       // one more image done (thread-safe)
  void add_frames(std::size_t n);              // a video's frames to come (thread-safe)
  void frame_done();                           // one more video frame written (thread-safe)
  void error(const std::string& message);      // log an error line above the bar (thread-safe)
  void warn(const std::string& message);       // log a warning line above the bar (thread-safe)
  void finish();                               // clear the bar

 private:
  void draw_locked(bool force);
  void clear_locked();

  std::mutex mutex_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  std::size_t frames_total_ = 0, frames_done_ = 0;  // videos' frames: the bar counts them too
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace vitattn::cli
