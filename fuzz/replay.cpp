// Replays files through a fuzz entry point, without libFuzzer: what ctest runs in every build
// (gcc included) over fuzz/corpus/<target>/ and fuzz/regressions/<target>/.
//
//   fuzz_replay TARGET [--if-exists] PATH...
//
// Every regular file below each PATH goes through the same function the fuzzer calls.
// A crash, a sanitizer report or a failed self-check kills the process; an exception other
// than vitattn::Error escaping is reported and makes the run fail. File names carry
// expectations: "ok-*" must be accepted and "bad-*" refused. A PATH that does not exist is
// an error, unless it follows --if-exists; finding no file at all is an error too.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "targets.hpp"

namespace fs = std::filesystem;
using vitattn::fuzz::Outcome;

namespace {

std::vector<std::uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fuzz_replay TARGET [--if-exists] PATH...\n");
    return 2;
  }
  const std::string target_name = argv[1];
  const auto target = vitattn::fuzz::target_by_name(target_name);
  if (!target) {
    std::fprintf(stderr, "fuzz_replay: unknown target %s\n", argv[1]);
    return 2;
  }

  std::vector<fs::path> files;
  bool optional = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--if-exists") {
      optional = true;
      continue;
    }
    const fs::path p = arg;
    if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
    } else if (!optional) {
      std::fprintf(stderr, "fuzz_replay: %s does not exist\n", arg.c_str());
      return 2;
    }
    optional = false;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay %s: no input files found\n", target_name.c_str());
    return 1;
  }

  int accepted = 0, refused = 0, failed = 0;
  for (const auto& f : files) {
    const auto bytes = read_all(f);
    const std::string name = f.filename().string();
    std::printf("%s (%zu bytes) ... ", f.string().c_str(), bytes.size());
    std::fflush(stdout);  // the name stays on screen if the entry point crashes
    Outcome outcome;
    try {
      outcome = target(bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      std::printf("FAILED: exception escaped: %s\n", e.what());
      ++failed;
      continue;
    }
    const bool ok = outcome == Outcome::accepted;
    (ok ? accepted : refused)++;
    const char* verdict = ok ? "accepted" : "refused";
    if ((name.rfind("ok-", 0) == 0 && !ok) || (name.rfind("bad-", 0) == 0 && ok)) {
      std::printf("FAILED: %s, but the name says otherwise\n", verdict);
      ++failed;
    } else {
      std::printf("%s\n", verdict);
    }
  }
  std::printf("fuzz_replay %s: %zu files, %d accepted, %d refused, %d failed\n", target_name.c_str(), files.size(),
              accepted, refused, failed);
  return failed ? 1 : 0;
}
