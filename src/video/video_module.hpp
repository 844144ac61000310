#pragma once
// Finding and loading libvitattn_video.so (video_module_abi.hpp), once per process, on first use.
// Where: the path given to set_video_module_path (the command line takes it from its
// environment; tests hide the module or point at another), else next to the executable (the
// build tree), else <exe_dir>/../lib/vitattn/ (an install).
#include <filesystem>
#include <string>

#include "video/video_module_abi.hpp"

namespace vitattn::video {

// The module to load instead of looking beside the executable; empty: look there. Takes effect
// only before the first video_module() call (the module is loaded once): call it at start-up,
// before any thread runs video code.
void set_video_module_path(const std::filesystem::path& path);

// The module's table; throws Error "video support is not available: <why>" (dlerror's text,
// or a module of another ABI version) when it cannot be loaded. Thread-safe.
const video_abi::Table& video_module();

// Whether video_module() returns (loads the module on first call), without throwing.
bool video_module_loads();

// The same, the error naming the file it was needed for: "SOURCE: video support is not available: …".
const video_abi::Table& video_module(const std::string& source);

}  // namespace vitattn::video
