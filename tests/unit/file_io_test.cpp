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

namespace vitattn::io {
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

// XXH64 against xxHash's own library (Debian's libxxhash0, loaded by name): every length from
// 0 to 200 bytes (no stripe, whole 32-byte stripes, and each 8-, 4- and 1-byte tail), then a
// megabyte and more fed in uneven pieces, and a file read by file_digest.
TEST(ContentHash, Xxh64IsXxHashsOwn) {
  EXPECT_EQ(Xxh64().digest(), 0xEF46DB3751D8E999ull);  // xxHash's published value for no bytes
  void* lib = ::dlopen("libxxhash.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) GTEST_SKIP() << "libxxhash.so.0 (the reference) is not installed: " << ::dlerror();
  using Reference = unsigned long long (*)(const void*, std::size_t, unsigned long long);
  const auto reference = reinterpret_cast<Reference>(::dlsym(lib, "XXH64"));
  ASSERT_NE(reference, nullptr);
  std::mt19937 rng(7);
  std::vector<unsigned char> bytes((1 << 20) + 77);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  for (std::size_t n = 0; n <= 200; ++n) {
    Xxh64 h;
    h.update(bytes.data(), n);
    EXPECT_EQ(h.digest(), reference(bytes.data(), n, 0)) << n << " bytes";
  }
  Xxh64 pieces;
  for (std::size_t at = 0, step = 1; at < bytes.size(); at += step, step = step * 3 % 1000 + 1)
    pieces.update(bytes.data() + at, std::min(step, bytes.size() - at));
  EXPECT_EQ(pieces.digest(), reference(bytes.data(), bytes.size(), 0));

  test::TempDir d;
  std::ofstream(d / "f.bin", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                      static_cast<std::streamsize>(bytes.size()));
  const FileDigest f = file_digest(d / "f.bin");
  EXPECT_EQ(f.xxh64, reference(bytes.data(), bytes.size(), 0));
  EXPECT_EQ(f.size, bytes.size());
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
}  // namespace vitattn::io
