#include "files/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::files {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw Error(display(path) + ": " + what);
}

// Where the thread in guarded() jumps back to on SIGBUS; null outside guarded().
thread_local sigjmp_buf* t_jump = nullptr;

// The mappings watched for a SIGBUS outside guarded(): what the handler may read (lock-free
// atomics only). A slot is claimed by a non-zero `begin`.
struct Watched {
  std::atomic<std::uintptr_t> begin{0}, end{0};  // page-aligned [begin, end) of the mapping
  std::atomic<std::atomic<bool>*> lost{nullptr};
};
Watched g_watched[MappedFile::kMaxWatched];

std::uintptr_t page_size() { return static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)); }

int watch(const std::uint8_t* data, std::size_t size, std::atomic<bool>* lost) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data), page = page_size();
  for (int i = 0; i < MappedFile::kMaxWatched; ++i) {
    std::uintptr_t free = 0;
    if (!g_watched[i].begin.compare_exchange_strong(free, begin)) continue;
    g_watched[i].lost.store(lost);
    g_watched[i].end.store(begin + (size + page - 1) / page * page);
    return i;
  }
  return -1;
}

void unwatch(int slot) {
  if (slot < 0) return;
  g_watched[slot].end.store(0);
  g_watched[slot].lost.store(nullptr);
  g_watched[slot].begin.store(0);
}

// A SIGBUS at `addr` in a watched mapping: zero pages over all of it (the reading instruction
// then completes when the handler returns), and the mapping marked lost. False when `addr` is
// in none (or the zero pages could not be mapped).
bool replace_lost_mapping(std::uintptr_t addr) {
  for (Watched& w : g_watched) {
    const std::uintptr_t begin = w.begin.load(), end = w.end.load();
    std::atomic<bool>* lost = w.lost.load();
    if (begin == 0 || addr < begin || addr >= end || lost == nullptr) continue;
    // mmap is a plain system call: safe here, whatever the interrupted thread was doing.
    void* p = ::mmap(reinterpret_cast<void*>(begin), end - begin, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) return false;
    lost->store(true, std::memory_order_release);
    return true;
  }
  return false;
}

void on_sigbus(int, siginfo_t* info, void*) {
  if (t_jump != nullptr) siglongjmp(*t_jump, 1);
  if (replace_lost_mapping(reinterpret_cast<std::uintptr_t>(info->si_addr))) return;
  // A SIGBUS outside our mappings is not ours to handle: back to the default action, and
  // the faulting instruction runs again and ends the process as it would have.
  std::signal(SIGBUS, SIG_DFL);
}

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, nullptr);
  });
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO named like a model must not wait for a writer; refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::strerror(errno));
  struct stat st {};
  const int stat_rc = ::fstat(fd, &st);
  const int stat_errno = errno;
  if (stat_rc != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (stat_rc != 0) fail(path, std::strerror(stat_errno));
    fail(path, S_ISDIR(st.st_mode) ? "is a folder, not a file" : "is not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);  // the mapping keeps the file
    if (p == MAP_FAILED) fail(path, std::string("cannot map the file: ") + std::strerror(map_errno));
    data_ = static_cast<const std::uint8_t*>(p);
  } else {
    ::close(fd);
  }
  install_sigbus_handler();
  if (data_ != nullptr) watch_slot_ = watch(data_, size_, &lost_);
}

MappedFile::~MappedFile() {
  unwatch(watch_slot_);
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

bool MappedFile::guarded(void (*read)(void* context), void* context) {
  sigjmp_buf jump;
  if (sigsetjmp(jump, 1) != 0) {  // back from on_sigbus
    t_jump = nullptr;
    return false;
  }
  t_jump = &jump;
  read(context);
  t_jump = nullptr;
  return true;
}

std::optional<std::vector<std::uint8_t>> MappedFile::copy(std::size_t offset, std::size_t n) const {
  offset = std::min(offset, size_);
  std::vector<std::uint8_t> out(std::min(n, size_ - offset));
  if (out.empty()) return out;
  struct Job {
    const std::uint8_t* from;
    std::vector<std::uint8_t>* to;
  } job{data_ + offset, &out};
  const bool ok = guarded([](void* j) {
    const auto* c = static_cast<const Job*>(j);
    std::memcpy(c->to->data(), c->from, c->to->size());
  }, &job);
  if (!ok) return std::nullopt;
  return out;
}

void MappedFile::populate() const {
  if (data_ == nullptr) return;
  void* p = const_cast<std::uint8_t*>(data_);
#ifdef MADV_POPULATE_READ
  if (::madvise(p, size_, MADV_POPULATE_READ) == 0) return;
#endif
  ::madvise(p, size_, MADV_WILLNEED);  // an older kernel: at least read ahead
}

void MappedFile::release(std::size_t offset, std::size_t n) const {
  if (data_ == nullptr || offset >= size_) return;
  const auto page = page_size();
  const auto from = reinterpret_cast<std::uintptr_t>(data_) + offset;
  const std::uintptr_t begin = (from + page - 1) / page * page, end = (from + std::min(n, size_ - offset)) / page * page;
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace vitattn::files
