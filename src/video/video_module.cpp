#include "video/video_module.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "files/companion.hpp"

namespace vitattn::video {
namespace fs = std::filesystem;
namespace {

struct Loaded {
  const video_abi::Table* table = nullptr;
  std::string why_not;  // when table is null
};

// Set at start-up, read once by load(): before any thread exists, so no lock.
fs::path& module_path() {
  static fs::path path;
  return path;
}

Loaded load() {
  const std::vector<fs::path> candidates =
      module_path().empty() ? files::companion_candidates(video_abi::kFileName) : std::vector<fs::path>{module_path()};
  const files::LoadedModule module = files::load_module(candidates, video_abi::kEntryPoint);
  if (module.entry == nullptr) return {nullptr, module.why_not};
  using Entry = const video_abi::Table* (*)();
  const video_abi::Table* table = reinterpret_cast<Entry>(module.entry)();
  std::string why_not = files::module_version_mismatch(module.path, table != nullptr ? &table->version : nullptr, video_abi::kVersion);
  if (!why_not.empty()) return {nullptr, std::move(why_not)};
  return {table, ""};
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
  return naming_source(source, []() -> const video_abi::Table& { return video_module(); });
}

}  // namespace vitattn::video
