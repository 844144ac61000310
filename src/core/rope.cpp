#include "rope.hpp"

#include <cmath>
#include <numbers>

namespace vitattn {

RowVector rope_periods(double base, int d_head) {
  const int n = d_head / 4;
  RowVector p(n);  // (d_head/4)
  for (int k = 0; k < n; ++k) p[k] = static_cast<float>(std::pow(base, 4.0 * k / d_head));
  return p;
}

RopeTable rope_table(const Rope& rope, int grid_h, int grid_w) {
  const Eigen::Index quarter = rope.periods.size(), half = 2 * quarter;
  RopeTable t{Matrix(Eigen::Index{grid_h} * grid_w, half), Matrix(Eigen::Index{grid_h} * grid_w, half)};
  for (int i = 0; i < grid_h; ++i)
    for (int j = 0; j < grid_w; ++j) {
      // "separate": each axis normalised by its own length, patch centres, then [0, 1] → [−1, 1]
      const double y = 2.0 * (i + 0.5) / grid_h - 1.0, x = 2.0 * (j + 0.5) / grid_w - 1.0;
      const Eigen::Index row = Eigen::Index{i} * grid_w + j;
      for (Eigen::Index k = 0; k < quarter; ++k) {
        const double period = static_cast<double>(rope.periods[k]);
        const double ay = 2.0 * std::numbers::pi * y / period, ax = 2.0 * std::numbers::pi * x / period;
        t.cos(row, k) = static_cast<float>(std::cos(ay));
        t.sin(row, k) = static_cast<float>(std::sin(ay));
        t.cos(row, quarter + k) = static_cast<float>(std::cos(ax));
        t.sin(row, quarter + k) = static_cast<float>(std::sin(ax));
      }
    }
  return t;
}

void apply_rope(MatrixView x, Eigen::Index first_patch, const RopeTable& table) {
  const Eigen::Index half = table.cos.cols();
  for (Eigen::Index r = 0; r < table.cos.rows(); ++r) {
    auto row = x.row(first_patch + r);  // (d_head)
    for (Eigen::Index m = 0; m < half; ++m) {
      const float a = row[m], b = row[m + half], c = table.cos(r, m), s = table.sin(r, m);
      row[m] = a * c - b * s;
      row[m + half] = b * c + a * s;
    }
  }
}

}  // namespace vitattn
