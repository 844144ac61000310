#include "segmentation_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "error.hpp"

namespace vitattn {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();  // numpy's spacing(1) = 2^−52

// One axis of torch's align_corners=False linear interpolation: output i reads source i0 and i1
// with weight (1 − t, t).
struct Tap {
  int i0 = 0, i1 = 0;
  double t = 0.0;
};

std::vector<Tap> linear_taps(int in, int out) {
  std::vector<Tap> taps(static_cast<std::size_t>(out));
  const double scale = static_cast<double>(in) / out;
  for (int i = 0; i < out; ++i) {
    const double src = std::max((i + 0.5) * scale - 0.5, 0.0);
    const int i0 = std::min(static_cast<int>(src), in - 1);
    taps[static_cast<std::size_t>(i)] = {i0, std::min(i0 + 1, in - 1), src - i0};
  }
  return taps;
}

void check_same_shape(const Grid& a, const Grid& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) throw Error("the map and the mask differ in size");
}

}  // namespace

Grid upsample_bilinear(const Matrix& map, int out_h, int out_w) {
  if (map.size() == 0 || out_h <= 0 || out_w <= 0) throw Error("upsample_bilinear: an empty map or output");
  const std::vector<Tap> ys = linear_taps(static_cast<int>(map.rows()), out_h);
  const std::vector<Tap> xs = linear_taps(static_cast<int>(map.cols()), out_w);
  const Grid m = map.cast<double>();
  Grid out(out_h, out_w);
  for (int y = 0; y < out_h; ++y) {
    const Tap& ty = ys[static_cast<std::size_t>(y)];
    for (int x = 0; x < out_w; ++x) {
      const Tap& tx = xs[static_cast<std::size_t>(x)];
      const double top = (1 - tx.t) * m(ty.i0, tx.i0) + tx.t * m(ty.i0, tx.i1);
      const double bottom = (1 - tx.t) * m(ty.i1, tx.i0) + tx.t * m(ty.i1, tx.i1);
      out(y, x) = (1 - ty.t) * top + ty.t * bottom;
    }
  }
  return out;
}

Grid min_max_normalised(const Grid& map) {
  const double lo = map.minCoeff(), hi = map.maxCoeff();
  if (!(hi > lo)) return Grid::Constant(map.rows(), map.cols(), std::numeric_limits<double>::quiet_NaN());
  return (map.array() - lo) / (hi - lo);
}

SegmentationCounts& SegmentationCounts::operator+=(const SegmentationCounts& o) {
  correct += o.correct;
  labeled += o.labeled;
  for (int c = 0; c < 2; ++c) {
    intersection[static_cast<std::size_t>(c)] += o.intersection[static_cast<std::size_t>(c)];
    union_[static_cast<std::size_t>(c)] += o.union_[static_cast<std::size_t>(c)];
  }
  return *this;
}

SegmentationCounts segmentation_counts(const Grid& normalised, const Grid& mask) {
  check_same_shape(normalised, mask);
  const double mean = normalised.mean();  // NaN for a constant map: every comparison false, background
  SegmentationCounts s;
  std::array<std::int64_t, 2> predicted{}, labelled{};
  for (Eigen::Index i = 0; i < normalised.size(); ++i) {
    const int pred = normalised.data()[i] > mean ? 1 : 0;
    const int label = mask.data()[i] != 0.0 ? 1 : 0;
    ++predicted[static_cast<std::size_t>(pred)];
    ++labelled[static_cast<std::size_t>(label)];
    if (pred == label) {
      ++s.correct;
      ++s.intersection[static_cast<std::size_t>(pred)];
    }
  }
  s.labeled = normalised.size();
  for (std::size_t c = 0; c < 2; ++c) s.union_[c] = predicted[c] + labelled[c] - s.intersection[c];
  return s;
}

double pixel_accuracy(const SegmentationCounts& counts) {
  return static_cast<double>(counts.correct) / (kEps + static_cast<double>(counts.labeled));
}

double mean_iou(const SegmentationCounts& counts) {
  double sum = 0.0;
  for (std::size_t c = 0; c < 2; ++c)
    sum += static_cast<double>(counts.intersection[c]) / (kEps + static_cast<double>(counts.union_[c]));
  return sum / 2.0;
}

double average_precision(const std::vector<double>& scores, const std::vector<std::uint8_t>& labels) {
  if (scores.size() != labels.size()) throw Error("average_precision: scores and labels differ in length");
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  const auto positives = static_cast<double>(std::count_if(labels.begin(), labels.end(), [](std::uint8_t l) { return l != 0; }));
  if (positives == 0) return 0.0;
  double ap = 0.0, recall_before = 0.0;
  std::size_t tp = 0, seen = 0;
  for (std::size_t i = 0; i < order.size();) {
    const double threshold = scores[order[i]];
    for (; i < order.size() && scores[order[i]] == threshold; ++i, ++seen) tp += labels[order[i]] != 0 ? std::size_t{1} : std::size_t{0};
    const double recall = static_cast<double>(tp) / positives;
    ap += (recall - recall_before) * (static_cast<double>(tp) / static_cast<double>(seen));
    recall_before = recall;
  }
  return ap;
}

double segmentation_ap(const Grid& normalised, const Grid& mask) {
  check_same_shape(normalised, mask);
  const auto n = static_cast<std::size_t>(normalised.size());
  std::vector<double> scores(2 * n);
  std::vector<std::uint8_t> labels(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = normalised.data()[i];
    const bool object = mask.data()[i] != 0.0;
    scores[i] = std::isnan(v) ? 0.0 : 1.0 - v;  // background channel
    labels[i] = object ? 0 : 1;
    scores[n + i] = std::isnan(v) ? 0.0 : v;  // object channel
    labels[n + i] = object ? 1 : 0;
  }
  return average_precision(scores, labels);
}

bool pointing_hit(const Grid& map, const Grid& mask, double tolerance) {
  check_same_shape(map, mask);
  Eigen::Index best = 0;
  for (Eigen::Index i = 1; i < map.size(); ++i)
    if (map.data()[i] > map.data()[best]) best = i;
  const auto by = static_cast<double>(best / map.cols()), bx = static_cast<double>(best % map.cols());
  const int r = static_cast<int>(std::floor(tolerance));
  for (int y = std::max(0, static_cast<int>(by) - r); y <= std::min<int>(static_cast<int>(mask.rows()) - 1, static_cast<int>(by) + r); ++y)
    for (int x = std::max(0, static_cast<int>(bx) - r); x <= std::min<int>(static_cast<int>(mask.cols()) - 1, static_cast<int>(bx) + r); ++x)
      if (mask(y, x) != 0.0 && (y - by) * (y - by) + (x - bx) * (x - bx) <= tolerance * tolerance) return true;
  return false;
}

}  // namespace vitattn
