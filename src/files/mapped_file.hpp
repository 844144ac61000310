#pragma once
// A file mapped read-only, so a model's weights are converted straight from the page cache
// into their matrices: no read buffer, no second copy of the file in memory.
//
// MAP_PRIVATE: nothing vitattn does can write to the file. If another program truncates the
// file while it is mapped, the pages past the new end are gone and touching them raises
// SIGBUS; every read of the mapping goes through guarded(), which turns that SIGBUS into a
// false return (and the caller into an Error), not a crash. What no mapping can prevent:
// another program rewriting the bytes in place while we read gives a mix of old and new
// bytes, as a plain read() would.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace vitattn::io {

class MappedFile {
 public:
  // Maps the regular file at `path`; throws Error "PATH: <reason>" (missing, a folder, not
  // a regular file, unreadable). An empty file maps to no bytes.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }  // the file's size when it was mapped

  // Runs read(context), which may read from any mapping, and returns true; returns false
  // instead if a page it touched was cut off by the file shrinking (SIGBUS). `read` must not
  // throw nor hold anything that needs a destructor: on SIGBUS it is left by siglongjmp.
  static bool guarded(void (*read)(void* context), void* context);

  // Bytes [offset, offset + n) of the mapping (clipped to its size) copied out, or nullopt
  // when the file shrank under us.
  std::optional<std::vector<std::uint8_t>> copy(std::size_t offset, std::size_t n) const;

  // Gives back the pages of [offset, offset + n) that lie wholly inside it: once a tensor
  // has been converted its bytes are not needed again, so the process's memory holds each
  // weight once, not twice. Reading them again still works (they come back from the file).
  void release(std::size_t offset, std::size_t n) const;

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace vitattn::io
