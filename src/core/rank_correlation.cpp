#include "rank_correlation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "error.hpp"

namespace vitattn {

Eigen::VectorXd average_ranks(const Matrix& values) {
  const Eigen::Index n = values.size();
  const float* v = values.data();
  for (Eigen::Index i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) throw Error("a map holds a value that is not finite: it cannot be ranked");
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::stable_sort(order.begin(), order.end(), [v](Eigen::Index a, Eigen::Index b) { return v[a] < v[b]; });
  Eigen::VectorXd ranks(n);
  for (Eigen::Index i = 0; i < n;) {
    Eigen::Index j = i;
    while (j + 1 < n && v[order[static_cast<std::size_t>(j + 1)]] == v[order[static_cast<std::size_t>(i)]]) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;  // ranks i+1 … j+1
    for (Eigen::Index k = i; k <= j; ++k) ranks(order[static_cast<std::size_t>(k)]) = mean_rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) throw Error("spearman: the maps differ in size");
  const Eigen::VectorXd ra = average_ranks(a), rb = average_ranks(b);
  const Eigen::VectorXd da = ra.array() - ra.mean(), db = rb.array() - rb.mean();
  const double norm = std::sqrt(da.squaredNorm() * db.squaredNorm());
  return norm > 0.0 ? da.dot(db) / norm : 0.0;
}

}  // namespace vitattn
