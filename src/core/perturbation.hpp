#pragma once
// Positive and negative perturbation of the input by a map's ranking of its pixels, as Chefer,
// Gur, Wolf (CVPR 2021) measure relevance maps: their baselines/ViT/pertubation_eval_from_hdf5.py.
//
// The definition, every step of which a test recomputes independently (numpy/torch):
// - The map is upsampled to the input (H, W) (segmentation_metrics.hpp's upsample_bilinear),
//   and its N = H·W pixels ranked: positive, highest first; negative, lowest first. Equal
//   values keep index order (row-major, the lower index first), so the ranking never depends
//   on a sort's whim (their torch.topk leaves ties unspecified).
// - At step k = 1 … 9 the first ⌊k·N/10⌋ ranked pixels are set to 0 in every channel of the
//   unnormalised image (u8/255), that is to (0 − mean[c]) / std[c] in the model's input.
// - Each step is a hit when the model's top-1 class (the first of equal logits) is the target.
// - The AUC is the trapezoid rule over the fractions 0, 0.1, …, 0.9 of the hits, the
//   unperturbed input's hit at 0 included, times 100.
#include <vector>

#include "image_tensor.hpp"
#include "segmentation_metrics.hpp"
#include "vit.hpp"

namespace vitattn {

inline constexpr int kPerturbationSteps = 9;  // 10 %, …, 90 %

enum class Perturbation { positive, negative };

// map (H, W) → the pixel indices (row-major), highest first (positive) or lowest first
// (negative), ties by index. Throws Error for a non-finite value.
std::vector<int> pixel_ranking(const Grid& map, Perturbation kind);

// ⌊k·N/10⌋: the pixels removed at step k (0 ≤ k ≤ 9).
int pixels_at_step(int k, int n_pixels);

// x (3, H, W) with the first `count` pixels of `ranking` set to the normalised zero of `norm`.
ImageTensor with_pixels_removed(const ImageTensor& x, const Normalization& norm, const std::vector<int>& ranking,
                                int count);

struct PerturbationCurve {
  std::vector<double> fractions;  // 0, 0.1, …, 0.9
  std::vector<double> hits;       // 1 where the top-1 is the target, else 0; [0]: the unperturbed input's
  double auc = 0.0;               // trapezoid over fractions, × 100
};

// The curve of `map` (upsampled, (H, W) of x) for `target`. x is the model's normalised input;
// `unperturbed_hit` the input's own hit (the caller has its logits). 9 forwards. Throws Error
// when the model has no classifier or the shapes disagree.
PerturbationCurve perturbation_curve(const VitModel& model, const ImageTensor& x, const Grid& map, Perturbation kind,
                                     int target, bool unperturbed_hit, bool scale);

// The AUC of hits at 0, 0.1, …: the trapezoid rule × 100.
double perturbation_auc(const std::vector<double>& hits);

}  // namespace vitattn
