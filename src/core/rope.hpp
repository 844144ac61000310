#pragma once
// Rotary position embedding (RoPE) as DINOv3 uses it: no learned position table; each patch
// token's query and key are rotated by angles that follow its place on the patch grid, so any
// grid works as it is, without resampling. The class and storage (register) tokens are not
// rotated.
//
// The reference's convention (facebookresearch/dinov3 dinov3/layers/rope_position_encoding.py
// RopePositionEmbedding.forward with normalize_coords="separate", eval mode: no shift, jitter
// or rescale; dinov3/layers/attention.py rope_apply / rope_rotate_half; the same in Hugging
// Face's modeling_dinov3_vit.py), for a grid of H × W patches and a head d_head wide:
//   - coordinates: patch (i, j), raster order (row i of H, column j of W), has
//       y = 2·(i + 0.5)/H − 1,  x = 2·(j + 0.5)/W − 1      (each axis in (−1, 1) on its own);
//   - periods: d_head/4 of them, p_k = base^(4k/d_head) (base 100; the facebookresearch file
//     stores them as rope_embed.periods, Hugging Face computes them from rope_theta);
//   - angles over the head's first half: a[k] = 2π·y/p_k for k < d_head/4, then
//     a[d_head/4 + k] = 2π·x/p_k; the second half repeats the first (angles.tile(2));
//   - rotation, half-split (not interleaved): for m < d_head/2, with h = d_head/2,
//       q'[m]     = q[m]·cos a[m] − q[m + h]·sin a[m]
//       q'[m + h] = q[m + h]·cos a[m] + q[m]·sin a[m]
//     the same for k; v is not rotated.
// The angles are computed in double and rounded once; the reference computes them in float32
// (the released ViTs' rope dtype fp32), which agrees to about 1e-7.
#include "tensor.hpp"

namespace vitattn {

struct Rope {
  RowVector periods;  // (d_head/4); empty: the model has no RoPE
  bool present() const { return periods.size() > 0; }
};

// The periods base^(4k/d_head), k = 0 … d_head/4 − 1 (RopePositionEmbedding._init_weights
// with `base`; Hugging Face's 1/inv_freq). d_head a positive multiple of 4.
RowVector rope_periods(double base, int d_head);

// One grid's rotation: cos and sin of every patch's angles over half a head.
struct RopeTable {
  Matrix cos;  // (grid_h·grid_w, d_head/2)
  Matrix sin;  // (grid_h·grid_w, d_head/2)
};
RopeTable rope_table(const Rope& rope, int grid_h, int grid_w);

// Rotates one head's queries or keys in place: rows first_patch … of x (n_tokens, d_head) are the
// patches, in raster order, table.cos.rows() of them; the rows before them are left alone.
void apply_rope(MatrixView x, Eigen::Index first_patch, const RopeTable& table);

}  // namespace vitattn
