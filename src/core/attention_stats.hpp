#pragma once
// Two numbers per head that come from attention alone: how spread out its rows are (entropy)
// and how far in the image it looks (the ViT paper's mean attention distance, Fig. 7).
#include "tensor.hpp"

namespace vitattn {

// Mean over all query rows of −Σ_j a_ij·ln a_ij, in nats. a (n_tokens, n_tokens), rows sum to 1.
double mean_row_entropy(const Matrix& attention);

// Entropy −Σ p·ln p of a map of weights ≥ 0 after dividing it by its sum, in nats; 0 for an all-zero map.
double map_entropy(const Matrix& map);

// Pairwise distances of patch centres in input pixels: (grid_h·grid_w, grid_h·grid_w),
// patch j at row j / grid_w, column j % grid_w, each patch_size pixels wide.
Matrix patch_distances(int grid_h, int grid_w, int patch_size);

// Mean over the patch queries of Σ_j a_ij·d_ij / Σ_j a_ij, over the patch keys j only (the
// class token and registers, which have no place in the image, are left out and the weights
// renormalised over the patches). a (n_tokens, n_tokens) with patches from `first_patch`;
// distances from patch_distances. In pixels of the model input.
double mean_attention_distance(const Matrix& attention, int first_patch, const Matrix& distances);

}  // namespace vitattn
