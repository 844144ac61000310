#pragma once
// A file mapped read-only, so a model's weights are read in place from the page cache (or
// converted straight from it where they need converting): no read buffer, no copy of the file
// in memory.
//
// MAP_PRIVATE: nothing vitattn does can write to the file. If another program truncates the
// file while it is mapped, the pages past the new end are gone and touching them raises
// SIGBUS. Two guards turn that into an Error, not a crash:
// - at load, every read goes through guarded(), which turns the SIGBUS into a false return;
// - afterwards, when the weights are read in place by any thread (a forward pass, its GEMM
//   workers), the handler puts zero pages where the whole mapping was, so the reading
//   instruction completes, and marks the mapping lost(). Whoever read it asks lost() after
//   reading and fails what it computed from the zeros. The mapping stays lost: every later
//   read of it fails too.
// What no mapping can prevent: another program rewriting the bytes in place while we read
// gives a mix of old and new bytes, as a plain read() would.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace vitattn::files {

class MappedFile {
 public:
  // Maps the regular file at `path`; throws Error "PATH: <reason>" (missing, a folder, not
  // a regular file, unreadable). An empty file maps to no bytes.
  explicit MappedFile(const std::filesystem::path& path);
  // Up to kMaxWatched mappings at once are watched for a SIGBUS outside guarded(); past that,
  // one is mapped without the watch (a SIGBUS on it ends the process, as without the guard).
  static constexpr int kMaxWatched = 64;
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

  // Maps every page of the file in ahead, in one system call (MADV_POPULATE_READ, Linux 5.14;
  // else read-ahead only), so that a whole pass over the mapping does not take one fault per
  // page or two: for a file whose bytes will all be read. A hint: changes no byte, and a file
  // cut short meanwhile is caught by the reads after, as without it.
  void populate() const;

  // Gives back the pages of [offset, offset + n) that lie wholly inside it: once a tensor
  // has been converted its bytes are not needed again, so the process's memory holds each
  // weight once, not twice. Reading them again still works (they come back from the file).
  void release(std::size_t offset, std::size_t n) const;

  // True once a read outside guarded() touched a page the file no longer has (it was cut
  // short): the mapping now reads as zeros, and what was computed from it since is wrong.
  bool lost() const { return lost_.load(std::memory_order_acquire); }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  int watch_slot_ = -1;              // this mapping's slot in the SIGBUS handler's table, or -1
  mutable std::atomic<bool> lost_{false};
};

}  // namespace vitattn::files
