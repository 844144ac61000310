#pragma once
// The single-head ViT attention model: a patch embedding, a class token, position
// embeddings and one attention head. PyTorch nn.Linear convention: y = x·Wᵀ + b.
#include <string>

#include "image_tensor.hpp"
#include "layers.hpp"
#include "tensor.hpp"

namespace vitattn {

struct SingleHeadModel {
  int patch_size = 16;  // P
  Matrix w_patch;       // (d_model, 3·P·P): Conv2d(3, d_model, P, stride P) weight, flattened (c, y, x)
  RowVector b_patch;    // (d_model)
  RowVector cls_token;  // (d_model)
  Matrix pos_embed;     // (1 + n_patches, d_model)
  Matrix w_q, w_k, w_v; // (d_k, d_model)
  RowVector b_q, b_k, b_v;  // (d_k)
  Normalization norm;

  int d_model() const { return static_cast<int>(w_patch.rows()); }
  int d_k() const { return static_cast<int>(w_q.rows()); }
  int n_patches() const { return static_cast<int>(pos_embed.rows()) - 1; }
  int grid_size() const;  // √n_patches: patches per side
  int img_size() const { return grid_size() * patch_size; }  // S

  // Throws Error naming `source` and the first tensor whose shape does not fit the others,
  // or that holds a non-finite value.
  void validate(const std::string& source) const;
};

// image (3, S, S) → patches (n_patches, 3·P·P), raster order, each flattened (c, y, x)
Matrix patchify(const ImageTensor& image, int patch_size);

// patches (n_patches, 3·P·P) → x (1 + n_patches, d_model): [cls; W_E·p + b_E] + pos_embed
Matrix embed_tokens(const SingleHeadModel& model, const Matrix& patches);

struct AttentionMaps {
  Matrix weights;  // (n_tokens, n_tokens) softmax probabilities A
  Matrix output;   // (n_tokens, d_k) A·V
  Matrix cls_map;  // (grid, grid) A[0, 1:] laid back on the patch grid
};

// The whole forward pass of one image: patchify → embed → q, k, v → attention → class-token map.
AttentionMaps run_single_head(const SingleHeadModel& model, const ImageTensor& image, bool scale = true);

// cls row (1 + n_patches) → (grid, grid), patch j at (j / grid, j % grid)
Matrix cls_row_to_grid(const Matrix& weights, int grid_size);

// For display: (m − min) / (max − min); a flat map becomes all zeros.
Matrix normalize_for_display(const Matrix& map);

}  // namespace vitattn
