// libFuzzer target: the .npy reader (parse_npy), checked by writing back and reading again.
// The work is in targets.cpp, shared with the replay test that ctest runs in every build.
#include <cstddef>
#include <cstdint>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  vitattn::fuzz::npy_read_input(data, size);
  return 0;
}
