#include "video/video_module.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace vitattn::io {
namespace fs = std::filesystem;
namespace {

struct Loaded {
  const video_abi::Table* table = nullptr;
  std::string why_not;  // when table is null
};

fs::path exe_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Set at start-up, read once by load(): before any thread exists, so no lock.
fs::path& module_path() {
  static fs::path path;
  return path;
}

std::vector<fs::path> candidates() {
  if (!module_path().empty()) return {module_path()};
  const fs::path dir = exe_dir();
  return {dir / video_abi::kFileName, dir / ".." / "lib" / "vitattn" / video_abi::kFileName};
}

const char* last_dlerror() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

// The module stays loaded for the life of the process (never dlclose'd): its code may still be
// on the stack of a thread, and OpenCV's backends keep their own state.
Loaded load() {
  std::string missing;
  for (const fs::path& path : candidates()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      missing += (missing.empty() ? "" : "; ") + std::string(last_dlerror());
      continue;
    }
    using Entry = const video_abi::Table* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, video_abi::kEntryPoint));
    if (entry == nullptr) return {nullptr, fmt::format("{}: {}", path.string(), last_dlerror())};
    const video_abi::Table* table = entry();
    if (table == nullptr || table->version != video_abi::kVersion)
      return {nullptr, fmt::format("{} is of version {}, this vitattn needs version {} (install the module built with it)",
                                   path.string(), table == nullptr ? 0 : table->version, video_abi::kVersion)};
    return {table, ""};
  }
  return {nullptr, missing};
}

}  // namespace

void set_video_module_path(const fs::path& path) { module_path() = path; }

const video_abi::Table& video_module() {
  static const Loaded loaded = load();  // once, thread-safe
  if (loaded.table == nullptr) throw Error("video support is not available: " + loaded.why_not);
  return *loaded.table;
}

bool video_module_loads() {
  try {
    video_module();
    return true;
  } catch (const Error&) {
    return false;
  }
}

const video_abi::Table& video_module(const std::string& source) {
  try {
    return video_module();
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

}  // namespace vitattn::io
