#include "dot_variance.hpp"

#include <cmath>

#include "seeded_model.hpp"

namespace vitattn {

std::vector<DotVariance> dot_product_variance(const std::vector<int>& d_ks, int pairs, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<DotVariance> rows;
  for (const int d_k : d_ks) {
    double sum = 0, sum_sq = 0;
    for (int t = 0; t < pairs; ++t) {
      double dot = 0;  // q (d_k) · k (d_k)
      for (int i = 0; i < d_k; ++i)  // uniform(−1,1)·√3 has variance 1
        dot += static_cast<double>(rng.uniform_pm1()) * std::sqrt(3.0) * static_cast<double>(rng.uniform_pm1()) *
               std::sqrt(3.0);
      sum += dot;
      sum_sq += dot * dot;
    }
    const double var = sum_sq / pairs - (sum / pairs) * (sum / pairs);
    rows.push_back({d_k, var, var / d_k});
  }
  return rows;
}

}  // namespace vitattn
