#pragma once
// From attention probabilities to the map that is drawn: pick or fuse heads, roll out
// across layers, lay the class token's row on the patch grid, and DINO's mass mask.
#include <vector>

#include "tensor.hpp"

namespace vitattn {

enum class HeadFusion { mean, max, min };

// heads H × (n_tokens, n_tokens) → (n_tokens, n_tokens), element-wise mean, max or min over heads
Matrix fuse_heads(const std::vector<Matrix>& heads, HeadFusion fusion);

// Zero the floor(n²·ratio) smallest entries of a (n, n) (ties broken by position), except
// entry (0, 0), the class token's link to itself.
void discard_weakest(Matrix& a, float discard_ratio);

// One layer's factor of a rollout from its fused (n_tokens, n_tokens) links: the weakest
// discard_ratio of them zeroed (discard_weakest), the residual path mixed in as (A + I)/2, and
// every row renormalised to sum 1. Attention rollout and gradient rollout share it.
Matrix rollout_step(Matrix fused, float discard_ratio);

// Attention rollout (Abnar & Zuidema 2020; head fusion and discarding as in jacobgil/vit-explain),
// one layer at a time, so that only the running product is held: for each layer, fuse the
// heads, zero the weakest discard_ratio of all links (never the class token's link to
// itself), mix in the residual path as (A + I)/2, renormalise every row to sum 1, and
// multiply: R = Â_L · … · Â_0, each (n_tokens, n_tokens).
class AttentionRollout {
 public:
  AttentionRollout(HeadFusion fusion, float discard_ratio);
  void add_layer(const std::vector<Matrix>& heads);  // H × (n_tokens, n_tokens), layers in order
  const Matrix& result() const { return rollout_; }  // (n_tokens, n_tokens)

 private:
  HeadFusion fusion_;
  float discard_ratio_;
  Matrix rollout_;
};

// Row 0 (the class token) over the patches → (grid_h, grid_w); patches start at `first_patch`
// (1, or 1 + n_registers), patch j at (j / grid_w, j % grid_w).
Matrix class_token_map(const Matrix& attention, int first_patch, int grid_h, int grid_w);

// The same for another leading token's row `query` (< first_patch): distilled DeiT's
// distillation token is row 1. A model without leading tokens (first_patch 0: SigLIP) hands
// its pooling probe's rows (1, n_tokens) instead, and `query` is 0.
Matrix query_token_map(const Matrix& attention, int query, int first_patch, int grid_h, int grid_w);

// DINO's mass mask: 1 on the smallest set of patches that holds `fraction` of the map's total
// mass (largest first), 0 elsewhere. map (grid_h, grid_w), values ≥ 0 → mask (grid_h, grid_w)
Matrix mass_mask(const Matrix& map, float fraction);

// For display: (m − min) / (max − min); a flat map becomes all zeros.
Matrix normalize_for_display(const Matrix& map);

}  // namespace vitattn
