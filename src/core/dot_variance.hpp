#pragma once
// The √d_k argument of `vitattn explain` (c), measured: for q and k of d_k independent
// components of mean 0 and variance 1, Var(q·k) = d_k, and Var(q·k/√d_k) = 1.
#include <cstdint>
#include <vector>

namespace vitattn {

struct DotVariance {
  int d_k = 0;
  double var = 0;         // Var(q·k) over the pairs
  double scaled_var = 0;  // Var(q·k/√d_k) = var / d_k
};

// One row per d_k, in order, from `pairs` random pairs each; components uniform on (−√3, √3)
// (variance 1) drawn from one SplitMix64(seed) stream across the rows, so a table is reproducible.
std::vector<DotVariance> dot_product_variance(const std::vector<int>& d_ks, int pairs, std::uint64_t seed);

}  // namespace vitattn
