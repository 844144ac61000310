#include "interrupt.hpp"

#include <cerrno>
#include <csignal>

#include <atomic>

#include "files/file_io.hpp"

namespace vitattn::cli {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

// Only async-signal-safe work here: a lock-free atomic, unlink (inside
// remove_temporaries_in_flight), sigaction and raise.
extern "C" void on_signal(int sig) {
  const int saved_errno = errno;
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) {
    errno = saved_errno;
    return;  // first signal: the batch sees the flag and stops taking images
  }
  // Second signal: the user wants out now. Leave no temporary behind, then die of the
  // signal as if it had not been caught (the signal is blocked in here, so raise() takes
  // effect as soon as the handler returns).
  files::remove_temporaries_in_flight();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
  errno = saved_errno;
}

struct Installed {
  int sig;
  bool active = false;
  struct sigaction previous {};
};
Installed g_installed[] = {{SIGINT}, {SIGTERM}};

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (auto& i : g_installed) sigaddset(&sa.sa_mask, i.sig);  // one handler at a time
  sa.sa_flags = SA_RESTART;  // reads and writes in flight go on; the flag is polled
  for (auto& i : g_installed) {
    if (sigaction(i.sig, nullptr, &i.previous) != 0) continue;
    if (i.sig == SIGINT && i.previous.sa_handler == SIG_IGN) continue;  // ignored by whoever started us
    i.active = sigaction(i.sig, &sa, nullptr) == 0;
  }
}

InterruptGuard::~InterruptGuard() {
  for (auto& i : g_installed)
    if (i.active) {
      sigaction(i.sig, &i.previous, nullptr);
      i.active = false;
    }
}

int InterruptGuard::signal_received() noexcept { return g_signal.load(); }

const char* signal_name(int signal) noexcept {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

int exit_status_for_signal(int signal) noexcept { return 128 + signal; }

}  // namespace vitattn::cli
