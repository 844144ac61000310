#pragma once
// Faithfulness of a map to the model's decision: deletion and insertion curves (Petsiuk, Das,
// Saenko, "RISE", BMVC 2018). A map is faithful when removing the patches it ranks highest
// makes the class's probability fall fast (a low deletion AUC), and putting them back first
// into a blurred image makes it rise fast (a high insertion AUC).
//
// The definition, every step of which a test recomputes independently (numpy/torch):
// - The N = grid_h·grid_w patches are ranked by the map, highest first; equal values keep
//   index order (row-major, the lower index first), so the ranking never depends on a sort.
// - At step k = 0 … K the top n_k = ⌈k·N/K⌉ patches (P×P pixels each, all three channels) are
//   deletion:  set to 0 in the model's normalised input (the normalisation mean);
//   insertion: taken from the sharp input, every other pixel from the blurred one.
// - The score at each step is the softmax probability of class c (one forward each).
// - The AUC is the trapezoid rule over the fraction of patches changed, n_k / N, from 0 to 1.
// The blurred copy is made by the caller (the core has no image filters).
#include <cstdint>
#include <vector>

#include "image_tensor.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

struct FaithfulnessSettings {
  int steps = 16;      // K ≥ 1
  bool scale = true;   // the forwards' 1/√d_head, as the run's own forward
};

struct FaithfulnessCurves {
  std::vector<double> fractions;  // (K+1) n_k / N: 0 … 1
  std::vector<double> deletion;   // (K+1) p(c) with the top n_k patches removed
  std::vector<double> insertion;  // (K+1) p(c) with the top n_k patches put back into the blurred input
  double deletion_auc = 0.0;      // lower is more faithful
  double insertion_auc = 0.0;     // higher is more faithful
};

// map (grid_h, grid_w) → the patch indices (row-major), highest value first, ties by index.
// Throws Error when the map holds a non-finite value (it could not be ranked).
std::vector<int> patch_ranking(const Matrix& map);

// n_k = ⌈k·N/K⌉, the patches changed at step k of K (0 ≤ k ≤ K; K ≥ 1).
int patches_at_step(int k, int n_patches, int steps);

// ∫ y dx by the trapezoid rule over the points (x_i, y_i), x ascending; 0 for fewer than two.
double trapezoid_auc(const std::vector<double>& x, const std::vector<double>& y);

// The baseline map (grid_h, grid_w): cell i (row-major) = the i-th output of splitmix64 from
// `seed`, its top 24 bits over 2^24 (in [0, 1), exact in float). splitmix64, not a standard
// distribution, so that the map is the same bits on every machine and library.
inline constexpr std::uint64_t kRandomMapSeed = 0x5eed;
Matrix random_map(int grid_h, int grid_w, std::uint64_t seed = kRandomMapSeed);

// The curves of `map` for class `class_index`. x (3, grid_h·P, grid_w·P) is the model's
// normalised input, blurred the same shape; map (grid_h, grid_w) its patch grid. 2·(K+1)
// forwards at most (a step that changes no more patches than the one before reuses its score).
// Throws Error when the model has no classifier, the class is out of range, or the shapes disagree.
FaithfulnessCurves faithfulness_curves(const VitModel& model, const ImageTensor& x, const ImageTensor& blurred,
                                       const Matrix& map, int class_index, const FaithfulnessSettings& settings);

}  // namespace vitattn
