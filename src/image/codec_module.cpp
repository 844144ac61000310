#include "image/codec_module.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace vitattn::io {
namespace fs = std::filesystem;
namespace {

struct Loaded {
  const codec_abi::Table* table = nullptr;
  std::string why_not;  // when table is null
};

std::vector<fs::path> candidates() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path dir = ec ? fs::path() : exe.parent_path();
  return {dir / codec_abi::kFileName, dir / ".." / "lib" / "vitattn" / codec_abi::kFileName};
}

const char* last_dlerror() {
  const char* e = ::dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

Loaded checked(const codec_abi::Table* table, const std::string& where) {
  if (table == nullptr || table->version != codec_abi::kVersion)
    return {nullptr, where + " is of version " + std::to_string(table == nullptr ? 0 : table->version) +
                         ", this vitattn needs version " + std::to_string(codec_abi::kVersion) +
                         " (install the module built with it)"};
  return {table, ""};
}

// Never dlclose'd: OpenCV's codecs keep their own state for the life of the process.
Loaded load() {
  if (&vitattn_codec_module != nullptr) return checked(vitattn_codec_module(), "the linked codec module");
  std::string missing;
  for (const fs::path& path : candidates()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      missing += missing.empty() ? "" : "; ";
      missing += last_dlerror();
      continue;
    }
    using Entry = const codec_abi::Table* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, codec_abi::kEntryPoint));
    if (entry == nullptr) return {nullptr, path.string() + ": " + last_dlerror()};
    return checked(entry(), path.string());
  }
  return {nullptr, missing};
}

}  // namespace

const codec_abi::Table& codec_module(const std::string& source) {
  static const Loaded loaded = load();  // once, thread-safe
  if (loaded.table == nullptr)
    throw Error(source + ": decoding and encoding of this format is not available: " + loaded.why_not);
  return *loaded.table;
}

}  // namespace vitattn::io
