#pragma once
// Whole-file reads and all-or-nothing writes.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace vitattn::files {

// Reads a regular file of at most `max_bytes`; throws Error "PATH: <reason>" (missing,
// a folder, unreadable, too large).
std::vector<std::uint8_t> read_file(const std::filesystem::path& path,
                                    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// Writes `bytes` next to `path` under a temporary name, then renames it into place, so a
// reader (or a crash) never sees a half-written file. Throws Error naming `path`.
void write_file_atomic(const std::filesystem::path& path, const void* data, std::size_t size);

// Removes the temporary files that write_file_atomic calls are writing at this moment.
// Async-signal-safe: for a signal handler that is about to end the process.
void remove_temporaries_in_flight() noexcept;

// A temporary name beside `path` for a writer that opens the file itself (a video encoder):
// ".<stem>.tmp-<pid>-<n><extension>", the extension kept because the encoder picks its
// container by it. Registered like write_file_atomic's, so that a second signal removes it;
// commit() renames it to `path`, and a TemporaryPath not committed removes its file.
class TemporaryPath {
 public:
  explicit TemporaryPath(const std::filesystem::path& path);
  ~TemporaryPath();
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::filesystem::path& path() const { return tmp_; }
  void commit();  // throws Error naming the final path

 private:
  std::filesystem::path final_, tmp_;
  void* slot_ = nullptr;
  bool committed_ = false;
};

// An exclusive lock between processes, held for the object's life: flock(2) on a lock file at
// `path`, made when missing (never through a symbolic link) and, by default, removed when the
// lock is released, so that none is left behind. The constructor waits for the lock. Removing
// the file while others wait on it is safe among LockFiles: a waiter that gets the lock of a
// file no longer at `path` lets it go and locks the one there. A lock file other programs lock
// too (the hub cache's, which huggingface_hub locks without that check) is kept instead: one
// of them waiting on a removed file would hold its lock beside the next holder of the new one.
// On one machine's file systems; on a network file system (NFS, Lustre, CephFS) flock may lock
// only on this client. Throws Error naming `path`.
class LockFile {
 public:
  enum class OnRelease { remove, keep };
  explicit LockFile(const std::filesystem::path& path, OnRelease on_release = OnRelease::remove);
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  std::filesystem::path path_;
  OnRelease on_release_;
  int fd_ = -1;
};

// The temporary name write_file_atomic uses: ".<name>.tmp-<pid>-<n>" in the same folder.
bool is_temporary_name(const std::filesystem::path& path);

// A path for a message, on one line: as it is, unless it holds a control character (a
// newline in a file name would print as two log lines, the second reading like a message of
// its own); then in double quotes, with \xNN for each control character and \" and \\ for
// quotes and backslashes. Not for data: CSV and JSON fields take path.string().
std::string display(const std::filesystem::path& path);

// Text taken from a file, made safe for a one-line message: control characters (a newline in
// a tensor name would split the line) become \xNN. With `ascii`, so does every byte >= 0x80,
// for text that may not be valid UTF-8 (the JSON parser quotes the bytes it choked on).
std::string printable(std::string_view text, bool ascii = false);

}  // namespace vitattn::files
