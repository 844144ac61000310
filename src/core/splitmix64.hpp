#pragma once
// splitmix64 (Steele, Lea, Flood 2014): the generator behind the random map baseline
// (faithfulness.cpp) and the redrawn weights of the sanity check (model_randomisation.cpp),
// written out so that a test can draw the same values from its published definition.
#include <cstdint>

namespace vitattn {

// The next output, advancing `state`.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace vitattn
