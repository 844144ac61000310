#include "files/content_hash.hpp"

// xxHash whole, inline: its functions are compiled here, nothing is linked or loaded.
#define XXH_INLINE_ALL
// GCC 12 at -O3 inlines XXH64_update into Digest64::add_sized and then misreads its
// pointer arithmetic on the 8-byte length as "array subscript -3 outside array bounds"
// (-Warray-bounds, a false positive: the update reads exactly the 8 bytes given). The
// functions are xxHash's, defined in its header: the warning is silenced there only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <xxhash.h>
#pragma GCC diagnostic pop

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::files {

FileDigest file_digest(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO at the name is refused below instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(display(path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(display(path) + ": is not a regular file");
  }
  XXH64_state_t hash;  // a complete type with XXH_INLINE_ALL: on the stack
  XXH64_reset(&hash, 0);
  std::vector<unsigned char> buffer(1 << 20);
  std::uint64_t size = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(display(path) + ": " + std::strerror(err));
    }
    if (n == 0) break;
    XXH64_update(&hash, buffer.data(), static_cast<std::size_t>(n));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return {XXH64_digest(&hash), size};
}

std::string describe(const FileDigest& digest) {
  return fmt::format("XXH64 {:016x} of {} bytes", digest.xxh64, digest.size);
}

Digest64::Digest64() : state_(XXH64_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH64_reset(static_cast<XXH64_state_t*>(state_), 0);
}

Digest64::~Digest64() { XXH64_freeState(static_cast<XXH64_state_t*>(state_)); }

Digest64& Digest64::add(const void* data, std::size_t size) {
  if (size > 0) XXH64_update(static_cast<XXH64_state_t*>(state_), data, size);
  return *this;
}

Digest64& Digest64::add_sized(std::string_view bytes) {
  const std::uint64_t n = bytes.size();
  add(&n, sizeof n);
  return add(bytes.data(), bytes.size());
}

std::uint64_t Digest64::digest() const { return XXH64_digest(static_cast<const XXH64_state_t*>(state_)); }

std::string Digest64::hex() const { return fmt::format("{:016x}", digest()); }

}  // namespace vitattn::files
