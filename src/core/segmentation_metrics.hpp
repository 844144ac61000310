#pragma once
// Segmentation yardsticks of a map against an object mask, as the relevance papers measure
// them on ImageNet-segmentation: Chefer, Gur, Wolf, "Transformer Interpretability Beyond
// Attention Visualization" (CVPR 2021), their baselines/ViT/imagenet_seg_eval.py with
// utils/metrices.py (batch_pix_accuracy, batch_intersection_union, get_ap_scores); and the
// pointing game (Zhang et al., "Top-down Neural Attention by Excitation Backprop", ECCV 2016).
//
// The definition, every step of which a test recomputes independently (numpy, sklearn):
// - The map (grid_h, grid_w) is upsampled bilinearly to the input (H, W) as torch's
//   interpolate(mode='bilinear', align_corners=False) does, then min-max normalised:
//   v = (m − min) / (max − min). A constant map has no such normalisation: as in their code
//   (0/0), every value is then "not a number", predicted background and scored 0 for both AP
//   channels.
// - Prediction: object where v > mean(v), else background.
// - Pixel accuracy and IoU: counts summed over the set (correct, labelled; per class the
//   intersection and union), then correct / (ε + labelled) and mean over {background, object}
//   of intersection / (ε + union), ε = 2^−52 (numpy's spacing(1)), as their loop accumulates.
// - AP: per image, sklearn's average_precision_score of the scores (1 − v for background, v for
//   object) against the one-hot mask, both channels as one list of 2·H·W.
// - Pointing game: a hit when the upsampled map's maximum (the first in row-major order) lies
//   within `tolerance` pixels (Euclidean) of an object pixel. An empty mask has no hit.
// Everything is computed in double from the map's float values.
#include <array>
#include <cstdint>
#include <vector>

#include "tensor.hpp"

namespace vitattn {

// Double-precision row-major grid: the upsampled map and the mask (0 background, 1 object).
using Grid = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// map (h, w) → (out_h, out_w): torch's bilinear interpolate with align_corners=False (source
// coordinate (i + ½)·in/out − ½, clamped at 0; the upper neighbour clamped at the last row/column).
Grid upsample_bilinear(const Matrix& map, int out_h, int out_w);

// (m − min) / (max − min); every value NaN for a constant map (their code's 0/0).
Grid min_max_normalised(const Grid& map);

// The counts one image adds to the set's.
struct SegmentationCounts {
  std::int64_t correct = 0, labeled = 0;
  std::array<std::int64_t, 2> intersection{}, union_{};  // [background, object]
  SegmentationCounts& operator+=(const SegmentationCounts& o);
};

// normalised (H, W) from min_max_normalised, mask (H, W) of 0/1 → the image's counts. Throws
// Error when the shapes differ.
SegmentationCounts segmentation_counts(const Grid& normalised, const Grid& mask);

// correct / (ε + labeled).
double pixel_accuracy(const SegmentationCounts& counts);
// The mean over both classes of intersection / (ε + union).
double mean_iou(const SegmentationCounts& counts);

// sklearn's average_precision_score(labels, scores) for binary labels: Σ_k (R_k − R_{k−1}) P_k
// over the distinct scores from the highest down (ties form one threshold). 0 when no label is
// positive (their code's nan_to_num of sklearn's undefined value). Sizes must agree.
double average_precision(const std::vector<double>& scores, const std::vector<std::uint8_t>& labels);

// The image's AP: average_precision of (1 − v, v) against (mask == 0, mask == 1), NaN scores as 0.
double segmentation_ap(const Grid& normalised, const Grid& mask);

inline constexpr double kPointingTolerance = 15.0;  // pixels at the input resolution
// map (H, W) (upsampled, any scale), mask (H, W) → hit or miss.
bool pointing_hit(const Grid& map, const Grid& mask, double tolerance = kPointingTolerance);

}  // namespace vitattn
