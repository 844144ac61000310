// libFuzzer target: vitattn's PNG encoder, checked by decoding with libpng (cv::imdecode).
// The work is in targets.cpp, shared with the replay test that ctest runs in every build.
#include <cstddef>
#include <cstdint>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  vitattn::fuzz::png_input(data, size);
  return 0;
}
