#include "files/companion.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

namespace vitattn::files {
namespace fs = std::filesystem;
namespace {

const char* last_dlerror() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

}  // namespace

std::vector<fs::path> companion_candidates(const std::string& file_name) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path dir = ec ? fs::path() : exe.parent_path();
  return {dir / file_name, dir / ".." / "lib" / "vitattn" / file_name};
}

LoadedModule load_module(const std::vector<fs::path>& candidates, const char* entry_point) {
  std::string missing;
  for (const fs::path& path : candidates) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      if (!missing.empty()) missing += "; ";
      missing += last_dlerror();
      continue;
    }
    void* entry = ::dlsym(handle, entry_point);
    if (entry == nullptr) return {nullptr, path.string(), fmt::format("{}: {}", path.string(), last_dlerror())};
    return {entry, path.string(), ""};
  }
  return {nullptr, "", missing};
}

std::string module_version_mismatch(const std::string& where, const int* version, int expected) {
  if (version != nullptr && *version == expected) return "";
  return fmt::format("{} is of version {}, this vitattn needs version {} (install the module built with it)", where,
                     version == nullptr ? 0 : *version, expected);
}

}  // namespace vitattn::files
