#include "perturbation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "classify.hpp"
#include "error.hpp"
#include "faithfulness.hpp"

namespace vitattn {
namespace {

// The index of the largest logit, the first of equal ones.
int top1(const RowVector& logits) {
  Eigen::Index best = 0;
  for (Eigen::Index i = 1; i < logits.size(); ++i)
    if (logits(i) > logits(best)) best = i;
  return static_cast<int>(best);
}

std::vector<double> step_fractions() {
  std::vector<double> f;
  for (int k = 0; k <= kPerturbationSteps; ++k) f.push_back(k / 10.0);
  return f;
}

}  // namespace

std::vector<int> pixel_ranking(const Grid& map, Perturbation kind) {
  for (Eigen::Index i = 0; i < map.size(); ++i)
    if (!std::isfinite(map.data()[i])) throw Error("the map holds a value that is not finite: its pixels cannot be ranked");
  std::vector<int> order(static_cast<std::size_t>(map.size()));
  std::iota(order.begin(), order.end(), 0);
  const double* v = map.data();
  if (kind == Perturbation::positive)
    std::stable_sort(order.begin(), order.end(), [v](int a, int b) { return v[a] > v[b]; });
  else
    std::stable_sort(order.begin(), order.end(), [v](int a, int b) { return v[a] < v[b]; });
  return order;
}

int pixels_at_step(int k, int n_pixels) {
  return static_cast<int>(static_cast<std::int64_t>(k) * n_pixels / 10);
}

ImageTensor with_pixels_removed(const ImageTensor& x, const Normalization& norm, const std::vector<int>& ranking,
                                int count) {
  ImageTensor out = x;
  const std::size_t plane = static_cast<std::size_t>(x.height) * static_cast<std::size_t>(x.width);
  for (std::size_t c = 0; c < 3; ++c) {
    const float zero = (0.0f - norm.mean[c]) / norm.std[c];
    for (int i = 0; i < count; ++i) out.chw[c * plane + static_cast<std::size_t>(ranking[static_cast<std::size_t>(i)])] = zero;
  }
  return out;
}

double perturbation_auc(const std::vector<double>& hits) {
  const std::vector<double> f = step_fractions();
  if (hits.size() != f.size()) throw Error("perturbation_auc: one hit per step, the unperturbed one first");
  return 100.0 * trapezoid_auc(f, hits);
}

PerturbationCurve perturbation_curve(const VitModel& model, const ImageTensor& x, const Grid& map, Perturbation kind,
                                     int target, bool unperturbed_hit, bool scale) {
  if (!model.has_classifier()) throw Error("the perturbation test needs a classifier");
  if (map.rows() != x.height || map.cols() != x.width) throw Error("the map and the input differ in size");
  const std::vector<int> ranking = pixel_ranking(map, kind);
  const int n = static_cast<int>(ranking.size());
  PerturbationCurve curve;
  curve.fractions = step_fractions();
  curve.hits.push_back(unperturbed_hit ? 1.0 : 0.0);
  ForwardOptions fo;
  fo.scale = scale;
  fo.on_attention = [](int, const std::vector<Matrix>&) {};  // only the logits are read
  for (int k = 1; k <= kPerturbationSteps; ++k) {
    const ForwardResult r = forward(model, with_pixels_removed(x, model.norm, ranking, pixels_at_step(k, n)), fo);
    curve.hits.push_back(top1(r.logits) == target ? 1.0 : 0.0);
  }
  curve.auc = perturbation_auc(curve.hits);
  return curve;
}

}  // namespace vitattn
