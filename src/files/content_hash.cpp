#include "files/content_hash.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::io {
namespace {

// xxHash's five primes.
constexpr std::uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull,
                        P4 = 0x85EBCA77C2B2AE63ull, P5 = 0x27D4EB2F165667C5ull;

static_assert(std::endian::native == std::endian::little, "the words are read little-endian");

std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t xxh_round(std::uint64_t acc, std::uint64_t input) { return std::rotl(acc + input * P2, 31) * P1; }

std::uint64_t merge_round(std::uint64_t acc, std::uint64_t lane) { return (acc ^ xxh_round(0, lane)) * P1 + P4; }

// One 32-byte stripe into the four lanes.
void stripe(std::uint64_t (&lanes)[4], const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lanes[i] = xxh_round(lanes[i], read64(p + 8 * i));
}

}  // namespace

void Xxh64::update(const void* data, std::size_t size) {
  auto p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {  // fill the pending stripe first
    const std::size_t take = std::min(size, sizeof pending_ - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    size -= take;
    if (pending_size_ < sizeof pending_) return;
    stripe(lanes_, pending_);
    pending_size_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32) stripe(lanes_, p);
  std::memcpy(pending_, p, size);
  pending_size_ = size;
}

std::uint64_t Xxh64::digest() const {
  std::uint64_t h;
  if (total_ >= 32) {
    h = std::rotl(lanes_[0], 1) + std::rotl(lanes_[1], 7) + std::rotl(lanes_[2], 12) + std::rotl(lanes_[3], 18);
    for (std::uint64_t lane : lanes_) h = merge_round(h, lane);
  } else {
    h = P5;  // seed 0
  }
  h += total_;
  const unsigned char* p = pending_;
  std::size_t left = pending_size_;
  for (; left >= 8; p += 8, left -= 8) h = std::rotl(h ^ xxh_round(0, read64(p)), 27) * P1 + P4;
  if (left >= 4) {
    h = std::rotl(h ^ (static_cast<std::uint64_t>(read32(p)) * P1), 23) * P2 + P3;
    p += 4;
    left -= 4;
  }
  for (; left > 0; ++p, --left) h = std::rotl(h ^ (static_cast<std::uint64_t>(*p) * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

FileDigest file_digest(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO at the name is refused below instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(display(path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(display(path) + ": is not a regular file");
  }
  Xxh64 hash;
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
    hash.update(buffer.data(), static_cast<std::size_t>(n));
    size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return {hash.digest(), size};
}

std::string describe(const FileDigest& digest) {
  return fmt::format("XXH64 {:016x} of {} bytes", digest.xxh64, digest.size);
}

}  // namespace vitattn::io
