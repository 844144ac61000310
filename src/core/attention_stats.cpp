#include "attention_stats.hpp"

#include <cmath>

#include "error.hpp"

namespace vitattn {

double mean_row_entropy(const Matrix& attention) {
  if (attention.rows() == 0) return 0.0;
  double total = 0.0;
  for (Eigen::Index i = 0; i < attention.rows(); ++i)
    for (Eigen::Index j = 0; j < attention.cols(); ++j) {
      const double p = static_cast<double>(attention(i, j));
      if (p > 0.0) total -= p * std::log(p);  // 0·ln 0 = 0
    }
  return total / static_cast<double>(attention.rows());
}

double map_entropy(const Matrix& map) {
  double sum = 0.0;
  for (Eigen::Index i = 0; i < map.size(); ++i) sum += static_cast<double>(map.data()[i]);
  if (!(sum > 0.0)) return 0.0;
  double h = 0.0;
  for (Eigen::Index i = 0; i < map.size(); ++i) {
    const double p = static_cast<double>(map.data()[i]) / sum;
    if (p > 0.0) h -= p * std::log(p);
  }
  return h;
}

Matrix patch_distances(int grid_h, int grid_w, int patch_size) {
  const int n = grid_h * grid_w;
  Matrix d(n, n);  // (n_patches, n_patches)
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double dy = (i / grid_w - j / grid_w) * patch_size, dx = (i % grid_w - j % grid_w) * patch_size;
      d(i, j) = static_cast<float>(std::sqrt(dy * dy + dx * dx));
    }
  return d;
}

double mean_attention_distance(const Matrix& attention, int first_patch, const Matrix& distances) {
  const Eigen::Index n = distances.rows();
  if (attention.rows() != first_patch + n || attention.cols() != first_patch + n)
    throw Error("mean_attention_distance: attention is " + std::to_string(attention.rows()) + "x" +
                std::to_string(attention.cols()) + ", expected " + std::to_string(first_patch + n) + " tokens");
  if (n == 0) return 0.0;
  double total = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    double weighted = 0.0, mass = 0.0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double a = static_cast<double>(attention(first_patch + i, first_patch + j));
      weighted += a * static_cast<double>(distances(i, j));
      mass += a;
    }
    if (mass > 0.0) total += weighted / mass;
  }
  return total / static_cast<double>(n);
}

}  // namespace vitattn
