#pragma once
// Finding and loading libvitattn_codecs.so (codec_module_abi.hpp) on first use: next to the
// binary (the build tree), then <bin>/../lib/vitattn (the install), as the video module. A
// program that links the implementation in (tests, fuzzers) uses it without loading anything.
#include <filesystem>
#include <string>

#include "image/codec_module_abi.hpp"

namespace vitattn::image {

// The module's table, loaded once (thread-safe). Throws Error "SOURCE: image decoding of
// this format is not available: <why>" when it cannot be loaded.
const codec_abi::Table& codec_module(const std::string& source);

}  // namespace vitattn::image
