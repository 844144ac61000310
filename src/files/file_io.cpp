#include "files/file_io.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace vitattn::files {
namespace fs = std::filesystem;

std::string display(const fs::path& path) {
  const std::string name = path.string();
  if (std::none_of(name.begin(), name.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
    return name;
  std::string quoted = "\"";
  for (const char ch : name) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += printable(std::string_view(&ch, 1));
  }
  return quoted + "\"";
}

std::string printable(std::string_view s, bool ascii) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || (ascii && c >= 0x80)) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}


namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw Error(display(path) + ": " + what);
}

std::string errno_text(int err) { return std::strerror(err); }

// Closes a POSIX descriptor on every exit path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The temporary files being written right now, so that a process about to die of a signal
// can remove them (remove_temporaries_in_flight, called from a signal handler: no
// allocation, no locks, only lock-free atomics and unlink). One slot per writer at a time;
// there are as many as -j allows workers. A writer that finds no free slot still writes,
// its temporary is then just not covered.
constexpr std::size_t kTempSlots = 1024;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live, 3 taken by the remover
  char path[PATH_MAX] = {};
};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");
// constinit: zeros in .bss, untouched until used. Without it GCC initialised all 4 MB in a
// static constructor at every start: a page fault for every page of the table, in every run,
// though most runs never hold more than a few temporaries (docs/performance.md, start-up).
constinit TempSlot g_temp_slots[kTempSlots];

TempSlot* claim_temp_slot(const fs::path& tmp) {
  const std::string& s = tmp.native();
  if (s.size() >= sizeof(TempSlot::path)) return nullptr;
  for (auto& slot : g_temp_slots) {
    int expected = 0;
    if (!slot.state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) continue;
    std::memcpy(slot.path, s.c_str(), s.size() + 1);
    slot.state.store(2, std::memory_order_release);
    return &slot;
  }
  return nullptr;
}

void release_temp_slot(TempSlot* slot) {
  if (slot == nullptr) return;
  int expected = 2;  // fails only once the remover took the slot, and then the process is ending
  slot->state.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

class TempInFlight {
 public:
  explicit TempInFlight(const fs::path& tmp) {
    const std::string& s = tmp.native();
    if (s.size() >= sizeof(TempSlot::path)) return;
    for (auto& slot : g_temp_slots) {
      int expected = 0;
      if (!slot.state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) continue;
      std::memcpy(slot.path, s.c_str(), s.size() + 1);
      slot.state.store(2, std::memory_order_release);
      slot_ = &slot;
      return;
    }
  }
  ~TempInFlight() {
    if (slot_ == nullptr) return;
    int expected = 2;  // fails only once the remover took the slot, and then the process is ending
    slot_->state.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
  }
  TempInFlight(const TempInFlight&) = delete;
  TempInFlight& operator=(const TempInFlight&) = delete;

 private:
  TempSlot* slot_ = nullptr;
};

}  // namespace

void remove_temporaries_in_flight() noexcept {
  for (auto& slot : g_temp_slots) {
    int expected = 2;
    if (slot.state.compare_exchange_strong(expected, 3, std::memory_order_acquire)) ::unlink(slot.path);
  }
}

std::vector<std::uint8_t> read_file(const fs::path& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO (or a device) named like an image must not wait for a
  // writer forever; it is refused below as not a regular file. Regular files ignore it.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail(path, errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(path, errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a folder, not a file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    fail(path, "file is " + std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(max_bytes));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, errno_text(errno));
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

bool is_temporary_name(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos;
}

void write_file_atomic(const fs::path& path, const void* data, std::size_t size) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
  const TempInFlight registered(tmp);  // before the file exists, until it is renamed or removed
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (f.fd < 0) fail(path, "cannot write: " + errno_text(errno));
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(f.fd, p + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::unlink(tmp.c_str());
      fail(path, "cannot write: " + errno_text(err));
    }
    done += static_cast<std::size_t>(n);
  }
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot write: " + errno_text(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "cannot write: " + errno_text(err));
  }
}

LockFile::LockFile(const fs::path& path, OnRelease on_release) : path_(path), on_release_(on_release) {
  for (;;) {
    Fd f{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)};
    if (f.fd < 0) fail(path, "cannot make the lock file: " + errno_text(errno));
    while (::flock(f.fd, LOCK_EX) != 0)
      if (errno != EINTR) fail(path, "cannot lock: " + errno_text(errno));
    // The holder before us removes the file as it lets go: ours must still be the one at `path`.
    struct stat held {}, named {};
    if (::fstat(f.fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      fd_ = f.fd;
      f.fd = -1;
      return;
    }
  }
}

LockFile::~LockFile() {
  // Before the lock goes: a waiter then finds the name gone, and retries.
  if (on_release_ == OnRelease::remove) ::unlink(path_.c_str());
  ::close(fd_);
}

TemporaryPath::TemporaryPath(const fs::path& path) : final_(path) {
  static std::atomic<unsigned> counter{0};
  tmp_ = path.parent_path() /
         fmt::format(".{}.tmp-{}-{}{}", path.stem().string(), ::getpid(), counter++, path.extension().string());
  slot_ = claim_temp_slot(tmp_);
}

TemporaryPath::~TemporaryPath() {
  if (!committed_) ::unlink(tmp_.c_str());
  release_temp_slot(static_cast<TempSlot*>(slot_));
}

void TemporaryPath::commit() {
  if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
    const int err = errno;
    fail(final_, "cannot write: " + errno_text(err));
  }
  committed_ = true;
}

}  // namespace vitattn::files
