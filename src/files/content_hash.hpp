#pragma once
// A file's content in 16 hex digits: XXH64 (seed 0), the 64-bit xxHash of its bytes. What a
// record of "which model made these outputs" holds (cli/settings_record.hpp): the same bytes
// give the same digest wherever the file lies and whatever its time stamps say, and a file
// that differs anywhere gives another one. Not a cryptographic hash: it tells files apart,
// it does not stand against someone forging one. Fast enough to read a checkpoint once
// more at memory speed (four independent lanes of 64-bit words).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace vitattn::io {

// XXH64 over bytes given in any number of pieces: update() as they come, digest() at the end
// (it may be asked more than once). The same value as xxHash's XXH64(data, size, 0).
class Xxh64 {
 public:
  void update(const void* data, std::size_t size);
  std::uint64_t digest() const;

 private:
  std::uint64_t lanes_[4] = {0x9E3779B185EBCA87ull + 0xC2B2AE3D27D4EB4Full, 0xC2B2AE3D27D4EB4Full, 0,
                             0 - 0x9E3779B185EBCA87ull};
  unsigned char pending_[32] = {};  // bytes not yet a whole 32-byte stripe
  std::size_t pending_size_ = 0;
  std::uint64_t total_ = 0;
};

struct FileDigest {
  std::uint64_t xxh64 = 0;
  std::uint64_t size = 0;  // bytes read
};

// Reads the regular file at `path` once, start to end. Throws Error "PATH: <reason>".
FileDigest file_digest(const std::filesystem::path& path);

// "XXH64 0123456789abcdef of 1234 bytes"
std::string describe(const FileDigest& digest);

}  // namespace vitattn::io
