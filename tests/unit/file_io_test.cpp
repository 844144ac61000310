// All-or-nothing writes, removing the temporaries in flight when the process must end, and a
// file's content hash.
#include "files/file_io.hpp"
#include "files/content_hash.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn::files {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_temporary_name(e.path())) found.push_back(e.path());
  return found;
}

TEST(FileIo, DisplayQuotesOnlyNamesWithControlCharacters) {
  EXPECT_EQ(display("photos/cat 1.jpg"), "photos/cat 1.jpg");
  EXPECT_EQ(display("caf\xC3\xA9.png"), "caf\xC3\xA9.png");  // UTF-8 as it is
  EXPECT_EQ(display("a\nb.png"), "\"a\\x0Ab.png\"");
  EXPECT_EQ(display("q\"\\\r.png"), "\"q\\\"\\\\\\x0D.png\"");
}

TEST(FileIo, AtomicWriteLeavesOnlyTheFinalFile) {
  test::TempDir d;
  const std::string text = "hello";
  write_file_atomic(d / "a.bin", text.data(), text.size());
  EXPECT_EQ(fs::file_size(d / "a.bin"), text.size());
  EXPECT_TRUE(temporaries(d.path()).empty());
}

// What a second Ctrl-C relies on: while a large write is in flight, its temporary can be
// removed from outside the writer (the signal handler's call), and the writer then fails
// instead of renaming a file that is no longer there.
TEST(FileIo, TemporariesInFlightCanBeRemoved) {
  // Catching the write in flight is a race the test usually wins at once; on a loaded machine
  // the write can finish first, so it tries a few times rather than skip (a skip fails under CI).
  const std::vector<char> big(256u << 20, 'x');  // long enough to be caught in flight
  for (int attempt = 0; attempt < 8; ++attempt) {
    test::TempDir d;
    std::atomic<bool> done{false};
    std::string error;
    std::thread writer([&] {
      try {
        write_file_atomic(d / "big.bin", big.data(), big.size());
      } catch (const Error& e) {
        error = e.what();
      }
      done = true;
    });
    bool caught = false;
    for (int i = 0; i < 20000 && !done && !caught; ++i) {
      if (!temporaries(d.path()).empty()) {
        remove_temporaries_in_flight();
        caught = true;
        EXPECT_TRUE(temporaries(d.path()).empty()) << "removed at once";
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    writer.join();
    if (!caught) continue;
    EXPECT_NE(error.find("big.bin: cannot write"), std::string::npos) << "the writer went on: '" << error << "'";
    EXPECT_FALSE(fs::exists(d / "big.bin"));
    EXPECT_TRUE(temporaries(d.path()).empty());
    return;
  }
  GTEST_SKIP() << "in 8 tries every write finished before its temporary was seen; nothing was checked";
}

TEST(FileIo, AFifoIsRefusedWithoutWaitingForAWriter) {
  test::TempDir d;
  ASSERT_EQ(::mkfifo((d / "pipe.png").c_str(), 0600), 0);
  // Should the open wait for a writer, one comes after 2 s (so the test ends either way)
  // and the time taken tells.
  std::atomic<bool> done{false};
  std::thread unblock([&] {
    for (int i = 0; i < 200 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done) return;
    const int fd = ::open((d / "pipe.png").c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    read_file(d / "pipe.png");
    ADD_FAILURE() << "a FIFO was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pipe.png: is not a regular file"), std::string::npos) << e.what();
  }
  done = true;
  unblock.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << "open() waited for a writer";
}

// file_digest reads the whole file, through its buffer's boundaries, and hashes every byte
// once in order: the digest of a file of a few buffers and an odd tail equals xxHash's one-shot
// XXH64 of the same bytes in memory (Debian's libxxhash0, loaded by name as an independent
// reference); an empty file gives xxHash's published value for no bytes, and one byte changed
// anywhere another digest.
TEST(ContentHash, AFileIsHashedWholeAsXxHashHashesItsBytes) {
  void* lib = ::dlopen("libxxhash.so.0", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << "libxxhash.so.0 (the reference, Debian's libxxhash0) is not installed: " << ::dlerror();
  using Reference = unsigned long long (*)(const void*, std::size_t, unsigned long long);
  const auto reference = reinterpret_cast<Reference>(::dlsym(lib, "XXH64"));
  ASSERT_NE(reference, nullptr);
  std::mt19937 rng(7);
  std::vector<unsigned char> bytes((3 << 20) + 77);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  test::TempDir d;
  const auto write = [&](const fs::path& p, std::size_t n) {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
  };
  write(d / "f.bin", bytes.size());
  const FileDigest f = file_digest(d / "f.bin");
  EXPECT_EQ(f.xxh64, reference(bytes.data(), bytes.size(), 0));
  EXPECT_EQ(f.size, bytes.size());
  write(d / "empty.bin", 0);
  EXPECT_EQ(file_digest(d / "empty.bin").xxh64, 0xEF46DB3751D8E999ull);  // xxHash's published value for no bytes
  bytes[(2 << 20) + 5] ^= 1;
  write(d / "g.bin", bytes.size());
  EXPECT_NE(file_digest(d / "g.bin").xxh64, f.xxh64);
  EXPECT_EQ(describe(FileDigest{0xabcull, 12}), "XXH64 0000000000000abc of 12 bytes");
  ::dlclose(lib);
}

TEST(ContentHash, AFifoOrAFolderIsRefusedWithoutWaiting) {
  test::TempDir d;
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  for (const fs::path& p : {d / "pipe", d.path()}) {
    try {
      file_digest(p);
      ADD_FAILURE() << p << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace vitattn::files
