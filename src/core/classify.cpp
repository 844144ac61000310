#include "classify.hpp"

#include <algorithm>
#include <cmath>

namespace vitattn {

std::vector<double> softmax(const RowVector& logits) {
  const double z_max = logits.size() ? static_cast<double>(logits.maxCoeff()) : 0.0;
  std::vector<double> p(static_cast<std::size_t>(logits.size()));
  double sum = 0.0;
  for (Eigen::Index i = 0; i < logits.size(); ++i) sum += p[static_cast<std::size_t>(i)] = std::exp(static_cast<double>(logits[i]) - z_max);
  for (double& v : p) v /= sum;
  return p;
}

std::vector<double> class_probabilities(const RowVector& logits, ClassProbability kind) {
  if (kind == ClassProbability::softmax) return softmax(logits);
  std::vector<double> p(static_cast<std::size_t>(logits.size()));
  for (Eigen::Index i = 0; i < logits.size(); ++i)
    p[static_cast<std::size_t>(i)] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[i])));
  return p;
}

std::vector<ClassScore> top_classes(const RowVector& logits, int k, ClassProbability kind) {
  const std::vector<double> p = class_probabilities(logits, kind);
  std::vector<ClassScore> scores;
  scores.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) scores.push_back({static_cast<int>(i), p[i]});
  const auto n = static_cast<std::size_t>(std::clamp<long>(k, 0, static_cast<long>(scores.size())));
  std::partial_sort(scores.begin(), scores.begin() + static_cast<std::ptrdiff_t>(n), scores.end(),
                    [](const ClassScore& a, const ClassScore& b) {
                      return a.probability != b.probability ? a.probability > b.probability : a.index < b.index;
                    });
  scores.resize(n);
  return scores;
}

}  // namespace vitattn
