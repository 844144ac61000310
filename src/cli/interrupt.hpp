#pragma once
// Ctrl-C (SIGINT) and SIGTERM during a run. The first signal only sets a flag: the batch
// takes no new image, the images in hand are finished and written whole, a summary is
// printed and the exit status is 128 + the signal (130, 143). A second signal ends the
// process at once, after removing the temporary files being written at that moment.
namespace vitattn::cli {

class InterruptGuard {
 public:
  // Installs the handlers (sigaction). SIGINT is left alone when it was ignored at start,
  // as it is for a background job of a non-interactive shell or under `nohup`-like tools.
  InterruptGuard();
  ~InterruptGuard();  // puts the previous handlers back
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The first signal received since the guard was made (SIGINT or SIGTERM), 0 if none.
  static int signal_received() noexcept;
};

const char* signal_name(int signal) noexcept;  // "SIGINT", "SIGTERM"
int exit_status_for_signal(int signal) noexcept;  // 128 + signal, the shells' convention

}  // namespace vitattn::cli
