// libFuzzer target: `vitattn serve`'s access rules and map query parsing.
// The work is in serve_targets.cpp, shared with the replay test that ctest runs in every build.
#include <cstddef>
#include <cstdint>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  vitattn::fuzz::serve_request_input(data, size);
  return 0;
}
