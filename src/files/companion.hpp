#pragma once
// vitattn's companion files: the modules the binary loads on first need (libvitattn_codecs.so,
// libvitattn_video.so: OpenCV's imgcodecs and videoio, whose hundred-odd libraries no other
// start should pay for) and the server executable `vitattn serve` replaces itself with
// (vitattn-serve: cpp-httplib and what it links). One rule says where they are, for all three:
// beside the running executable (a build tree), then <exe_dir>/../lib/vitattn (an install,
// where bin/ holds only the programs).
#include <filesystem>
#include <string>
#include <vector>

namespace vitattn::files {

// The places to try for `file_name`, in order.
std::vector<std::filesystem::path> companion_candidates(const std::string& file_name);

// A module's entry point, found by dlopen (RTLD_NOW | RTLD_LOCAL) of the first candidate that
// loads, then dlsym. Never dlclose'd: its code may be on a thread's stack, and OpenCV keeps
// state of its own for the life of the process.
struct LoadedModule {
  void* entry = nullptr;  // the entry point's address; null: not loaded
  std::string path;       // the file it came from (when one loaded)
  std::string why_not;    // when entry is null: the loader's messages, one per candidate tried
};
LoadedModule load_module(const std::vector<std::filesystem::path>& candidates, const char* entry_point);

// The reason a module's table is refused: it is null, or of another ABI version than the
// binary's (each ABI header raises its kVersion whenever its Table changes). Empty: accepted.
std::string module_version_mismatch(const std::string& where, const int* version, int expected);

}  // namespace vitattn::files
