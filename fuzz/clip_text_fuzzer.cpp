// libFuzzer target: a user's text through CLIP's tokeniser.
// The work is in text_targets.cpp, shared with the replay test that ctest runs in every build.
#include <cstddef>
#include <cstdint>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  vitattn::fuzz::clip_text_input(data, size);
  return 0;
}
