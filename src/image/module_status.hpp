#pragma once
// What a dlopened module (codec_module_abi.hpp, video_module_abi.hpp) says when a call fails:
// no exception crosses the boundary (the module has no vitattn::Error of its own, and no type
// has to match across the dlopen), so each function catches (module_guard.hpp) and writes its
// reason here, which the binary turns into an Error naming the file.
namespace vitattn::image {

struct ModuleStatus {
  char message[512] = {};  // the library's exception text, NUL-terminated; empty when it said nothing
};

}  // namespace vitattn::image
