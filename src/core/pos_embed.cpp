#include "pos_embed.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "error.hpp"

namespace vitattn {
namespace {

// Keys's cubic convolution kernel with a = −0.75 (what torch and OpenCV use).
constexpr float kA = -0.75f;
float cubic_near(float t) { return ((kA + 2) * t - (kA + 3)) * t * t + 1; }     // |t| ≤ 1
float cubic_far(float t) { return ((kA * t - 5 * kA) * t + 8 * kA) * t - 4 * kA; }  // 1 < |t| < 2

struct Taps {
  std::array<int, 4> index;
  std::array<float, 4> weight;
};

// Output position `dst` on an axis of n_out samples, read from n_in samples.
Taps taps(int dst, int n_in, int n_out) {
  const float scale = static_cast<float>(n_in) / static_cast<float>(n_out);
  const float src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;  // align_corners=False
  const float floor_src = std::floor(src);
  const float t = src - floor_src;
  const int i0 = static_cast<int>(floor_src);
  Taps k;
  k.weight = {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)};
  for (int j = 0; j < 4; ++j) k.index[static_cast<std::size_t>(j)] = std::clamp(i0 - 1 + j, 0, n_in - 1);
  return k;
}

}  // namespace

Matrix interpolate_pos_embed(const Matrix& pos, int grid_h, int grid_w, int new_h, int new_w) {
  if (grid_h <= 0 || grid_w <= 0 || new_h <= 0 || new_w <= 0 || pos.rows() != Eigen::Index{grid_h} * grid_w)
    throw Error("interpolate_pos_embed: " + std::to_string(pos.rows()) + " positions do not form a " +
                std::to_string(grid_h) + "x" + std::to_string(grid_w) + " grid");
  if (grid_h == new_h && grid_w == new_w) return pos;
  Matrix out(Eigen::Index{new_h} * new_w, pos.cols());
  RowVector along_x(pos.cols());
  for (int oy = 0; oy < new_h; ++oy) {
    const Taps ky = taps(oy, grid_h, new_h);
    for (int ox = 0; ox < new_w; ++ox) {
      const Taps kx = taps(ox, grid_w, new_w);
      auto dst = out.row(Eigen::Index{oy} * new_w + ox);
      dst.setZero();
      // Along x within each of the 4 source rows, then along y: torch's order of operations.
      for (std::size_t i = 0; i < 4; ++i) {
        const Eigen::Index row0 = Eigen::Index{ky.index[i]} * grid_w;
        along_x = kx.weight[0] * pos.row(row0 + kx.index[0]) + kx.weight[1] * pos.row(row0 + kx.index[1]) +
                  kx.weight[2] * pos.row(row0 + kx.index[2]) + kx.weight[3] * pos.row(row0 + kx.index[3]);
        dst += ky.weight[i] * along_x;
      }
    }
  }
  return out;
}

}  // namespace vitattn
