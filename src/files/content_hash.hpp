#pragma once
// A file's content in 16 hex digits: XXH64 (seed 0), the 64-bit xxHash of its bytes. What a
// record of "which model made these outputs" holds (cli/settings_record.hpp): the same bytes
// give the same digest wherever the file lies and whatever its time stamps say, and a file
// that differs anywhere gives another one. Not a cryptographic hash: it tells files apart,
// it does not stand against someone forging one. The hash is xxHash's own (Debian's
// libxxhash-dev, its header compiled in: no library to load at start), fast enough to read a
// checkpoint once more at memory speed.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace vitattn::files {

struct FileDigest {
  std::uint64_t xxh64 = 0;
  std::uint64_t size = 0;  // bytes read
};

// Reads the regular file at `path` once, start to end. Throws Error "PATH: <reason>".
FileDigest file_digest(const std::filesystem::path& path);

// "XXH64 0123456789abcdef of 1234 bytes"
std::string describe(const FileDigest& digest);

// XXH64 (seed 0) of bytes fed in pieces: the digest of the pieces' concatenation, so the same
// bytes give the same digest however they are cut. For identities built of several parts (a
// text tower's tensors, a list of prompts): each part fed with its length first, so that the
// parts' boundaries count too.
class Digest64 {
 public:
  Digest64();
  ~Digest64();
  Digest64(const Digest64&) = delete;
  Digest64& operator=(const Digest64&) = delete;
  Digest64& add(const void* data, std::size_t size);
  Digest64& add_sized(std::string_view bytes);  // its length (8 bytes), then the bytes
  std::uint64_t digest() const;
  std::string hex() const;  // 16 lower-case hex digits

 private:
  void* state_;  // XXH64_state_t, whose type the header keeps to content_hash.cpp
};

}  // namespace vitattn::files
