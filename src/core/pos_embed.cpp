#include "pos_embed.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "error.hpp"

namespace vitattn {
namespace {

// Keys's cubic convolution kernel: a = −0.75 in torch's plain bicubic, −0.5 in PIL's (antialias).
float cubic(float x, float a) {
  x = std::abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

struct Tap {
  int index;
  float weight;
};

// Which input samples, with which weights, make output sample `dst` along one axis.
std::vector<Tap> taps(int dst, int n_in, int n_out, PosInterp mode) {
  std::vector<Tap> t;
  if (mode == PosInterp::antialias) {
    // PIL / torch antialias: the kernel is stretched by the scale when shrinking, and the
    // weights are renormalised over the samples that exist.
    const float scale = static_cast<float>(n_in) / static_cast<float>(n_out);
    const float support = scale >= 1 ? 2 * scale : 2.0f;
    const float invscale = scale >= 1 ? 1 / scale : 1.0f;
    const float centre = scale * (static_cast<float>(dst) + 0.5f);
    const int lo = std::max(static_cast<int>(centre - support + 0.5f), 0);
    const int hi = std::min(static_cast<int>(centre + support + 0.5f), n_in);
    float total = 0;
    for (int i = lo; i < hi; ++i) {
      t.push_back({i, cubic((static_cast<float>(i) - centre + 0.5f) * invscale, -0.5f)});
      total += t.back().weight;
    }
    for (Tap& k : t) k.weight /= total;
    return t;
  }
  float src = 0;
  if (mode == PosInterp::align_corners) {
    src = n_out > 1 ? static_cast<float>(n_in - 1) / static_cast<float>(n_out - 1) * static_cast<float>(dst) : 0.0f;
  } else {
    const float scale = mode == PosInterp::offset ? static_cast<float>(n_in) / (static_cast<float>(n_out) + 0.1f)
                                                  : static_cast<float>(n_in) / static_cast<float>(n_out);
    src = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  }
  const float floor_src = std::floor(src);
  const float f = src - floor_src;
  const int i0 = static_cast<int>(floor_src);
  for (int j = -1; j <= 2; ++j)  // four samples around src, edges clamped
    t.push_back({std::clamp(i0 + j, 0, n_in - 1), cubic(f - static_cast<float>(j), -0.75f)});
  return t;
}

}  // namespace

Matrix interpolate_pos_embed(const Matrix& pos, int grid_h, int grid_w, int new_h, int new_w, PosInterp mode) {
  if (grid_h <= 0 || grid_w <= 0 || new_h <= 0 || new_w <= 0 || pos.rows() != Eigen::Index{grid_h} * grid_w)
    throw Error("interpolate_pos_embed: " + std::to_string(pos.rows()) + " positions do not form a " +
                std::to_string(grid_h) + "x" + std::to_string(grid_w) + " grid");
  if (grid_h == new_h && grid_w == new_w) return pos;
  // Separable, along x first then along y, as torch does.
  // pos (grid_h·grid_w, d) → along_x (grid_h·new_w, d) → out (new_h·new_w, d)
  Matrix along_x = Matrix::Zero(Eigen::Index{grid_h} * new_w, pos.cols());
  for (int ox = 0; ox < new_w; ++ox)
    for (const Tap& k : taps(ox, grid_w, new_w, mode))
      for (int y = 0; y < grid_h; ++y)
        along_x.row(Eigen::Index{y} * new_w + ox) += k.weight * pos.row(Eigen::Index{y} * grid_w + k.index);
  Matrix out = Matrix::Zero(Eigen::Index{new_h} * new_w, pos.cols());
  for (int oy = 0; oy < new_h; ++oy)
    for (const Tap& k : taps(oy, grid_h, new_h, mode))
      out.middleRows(Eigen::Index{oy} * new_w, new_w) += k.weight * along_x.middleRows(Eigen::Index{k.index} * new_w, new_w);
  return out;
}

}  // namespace vitattn
