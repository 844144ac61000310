#include "faithfulness.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "classify.hpp"
#include "error.hpp"
#include "splitmix64.hpp"

namespace vitattn {
namespace {

// p(c) of one input: a forward to the logits, then the softmax.
double class_probability(const VitModel& model, const ImageTensor& input, int class_index, bool scale) {
  ForwardOptions fo;
  fo.scale = scale;
  fo.on_attention = [](int, const std::vector<Matrix>&) {};  // nothing kept: only the logits are read
  const ForwardResult r = forward(model, input, fo);
  return softmax(r.logits)[static_cast<std::size_t>(class_index)];
}

// Copies patch `patch` (row-major on a grid grid_w wide) of `from` into `to`, every channel.
void copy_patch(const ImageTensor& from, ImageTensor& to, int patch, int grid_w, int p) {
  const int y0 = (patch / grid_w) * p, x0 = (patch % grid_w) * p;
  for (int c = 0; c < 3; ++c)
    for (int y = y0; y < y0 + p; ++y) {
      const std::size_t row = static_cast<std::size_t>((c * to.height + y) * to.width + x0);
      std::copy_n(from.chw.begin() + static_cast<std::ptrdiff_t>(row), p, to.chw.begin() + static_cast<std::ptrdiff_t>(row));
    }
}

// One curve: start from `start`, and at each step copy the next ranked patches from `source`
// (deletion: start = x, source = zeros; insertion: start = blurred, source = x).
std::vector<double> curve(const VitModel& model, const ImageTensor& start, const ImageTensor& source,
                          const std::vector<int>& ranking, int class_index, const FaithfulnessSettings& s, int grid_w) {
  const int n = static_cast<int>(ranking.size());
  ImageTensor input = start;
  std::vector<double> scores;
  int changed = 0;
  for (int k = 0; k <= s.steps; ++k) {
    const int n_k = patches_at_step(k, n, s.steps);
    if (k > 0 && n_k == changed) {  // no patch more than the step before: the same input
      scores.push_back(scores.back());
      continue;
    }
    for (; changed < n_k; ++changed) copy_patch(source, input, ranking[static_cast<std::size_t>(changed)], grid_w, model.patch_size);
    scores.push_back(class_probability(model, input, class_index, s.scale));
  }
  return scores;
}

void check_inputs(const VitModel& model, const ImageTensor& x, const ImageTensor& blurred, const Matrix& map,
                  int class_index, const FaithfulnessSettings& s) {
  if (!model.has_classifier()) throw Error("faithfulness needs a model with a classifier");
  if (class_index < 0 || class_index >= model.n_classes())
    throw Error("faithfulness: class " + std::to_string(class_index) + " is not one of the model's " +
                std::to_string(model.n_classes()));
  if (s.steps < 1) throw Error("faithfulness: steps must be at least 1, not " + std::to_string(s.steps));
  const int p = model.patch_size;
  if (map.size() == 0 || x.height != map.rows() * p || x.width != map.cols() * p || blurred.height != x.height ||
      blurred.width != x.width || x.chw.size() != static_cast<std::size_t>(3 * x.height * x.width) ||
      blurred.chw.size() != x.chw.size())
    throw Error("faithfulness: the map (" + std::to_string(map.rows()) + "x" + std::to_string(map.cols()) +
                " patches) does not fit the input (" + std::to_string(x.width) + "x" + std::to_string(x.height) +
                " pixels of patch " + std::to_string(p) + ")");
}

}  // namespace

std::vector<int> patch_ranking(const Matrix& map) {
  const Eigen::Index n = map.size();
  for (Eigen::Index i = 0; i < n; ++i)
    if (!std::isfinite(map.data()[i])) throw Error("faithfulness: the map has a non-finite value at patch " + std::to_string(i));
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const float* v = map.data();  // row-major: index i is row i / grid_w, column i % grid_w
  std::stable_sort(order.begin(), order.end(), [v](int a, int b) { return v[a] > v[b]; });
  return order;
}

int patches_at_step(int k, int n_patches, int steps) {
  const auto num = static_cast<long long>(k) * n_patches;
  return static_cast<int>((num + steps - 1) / steps);  // ⌈k·N/K⌉ in integers: exact
}

double trapezoid_auc(const std::vector<double>& x, const std::vector<double>& y) {
  double area = 0.0;
  for (std::size_t i = 1; i < std::min(x.size(), y.size()); ++i) area += (x[i] - x[i - 1]) * (y[i] + y[i - 1]) / 2.0;
  return area;
}

Matrix random_map(int grid_h, int grid_w, std::uint64_t seed) {
  Matrix map(grid_h, grid_w);
  std::uint64_t state = seed;
  for (Eigen::Index i = 0; i < map.size(); ++i)
    map.data()[i] = static_cast<float>(splitmix64(state) >> 40) / 16777216.0f;  // top 24 bits / 2^24
  return map;
}

FaithfulnessCurves faithfulness_curves(const VitModel& model, const ImageTensor& x, const ImageTensor& blurred,
                                       const Matrix& map, int class_index, const FaithfulnessSettings& settings) {
  check_inputs(model, x, blurred, map, class_index, settings);
  const std::vector<int> ranking = patch_ranking(map);
  const int n = static_cast<int>(ranking.size()), grid_w = static_cast<int>(map.cols());
  ImageTensor zeros = x;  // the normalisation mean
  std::fill(zeros.chw.begin(), zeros.chw.end(), 0.0f);

  FaithfulnessCurves c;
  for (int k = 0; k <= settings.steps; ++k)
    c.fractions.push_back(static_cast<double>(patches_at_step(k, n, settings.steps)) / n);
  c.deletion = curve(model, x, zeros, ranking, class_index, settings, grid_w);
  c.insertion = curve(model, blurred, x, ranking, class_index, settings, grid_w);
  c.deletion_auc = trapezoid_auc(c.fractions, c.deletion);
  c.insertion_auc = trapezoid_auc(c.fractions, c.insertion);
  return c;
}

}  // namespace vitattn
