#pragma once
// Seeded (untrained) weights, the same bytes on every platform for a given seed.
#include <cstdint>

#include "vit.hpp"

namespace vitattn {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator defined entirely by integer
// arithmetic, so unlike std::normal_distribution it gives the same stream everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [-1, 1), exactly representable: a 24-bit integer times 2^-23.
  float uniform_pm1();

 private:
  std::uint64_t state_;
};

// Tuning of the seeded weights (see make_seeded_model): chosen by looking at the maps of
// the sample photos so that an untrained head shows image structure, not a flat field.
inline constexpr float kQueryKeyGain = 2.0f;
inline constexpr float kPosEmbedBound = 0.035f;

struct SeededShape {
  int img_size = 224;   // S
  int patch_size = 16;  // P
  int d_model = 768;    // D
  int d_k = 64;
};

// One block, one head of width d_k, attention only: no norm, no output projection, no MLP,
// no final norm, no classifier; the position embeddings are for an S×S input.
// Throws Error when the shape does not make a model (S not a multiple of P, sizes ≤ 0).
VitModel make_seeded_model(const SeededShape& shape, std::uint64_t seed);

}  // namespace vitattn
