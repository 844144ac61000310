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

namespace vitattn::io {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw Error(display(path) + ": " + what);
}

// Where the thread in guarded() jumps back to on SIGBUS; null outside guarded().
thread_local sigjmp_buf* t_jump = nullptr;

void on_sigbus(int, siginfo_t*, void*) {
  if (t_jump != nullptr) siglongjmp(*t_jump, 1);
  // A SIGBUS outside a guarded read is not ours to handle: back to the default action, and
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
    ::madvise(p, size_, MADV_SEQUENTIAL);  // read once, front to back: read ahead, drop behind
  } else {
    ::close(fd);
  }
  install_sigbus_handler();
}

MappedFile::~MappedFile() {
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

void MappedFile::release(std::size_t offset, std::size_t n) const {
  if (data_ == nullptr || offset >= size_) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<std::uintptr_t>(data_) + offset;
  const std::uintptr_t begin = (from + page - 1) / page * page, end = (from + std::min(n, size_ - offset)) / page * page;
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace vitattn::io
