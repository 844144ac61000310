#pragma once
// Position embeddings for a patch grid other than the one the model was trained on.
#include "tensor.hpp"

namespace vitattn {

// pos (grid_h·grid_w, d_model), raster order → (new_h·new_w, d_model), resampled bicubically
// as timm and DINO do (torch.nn.functional.interpolate, mode="bicubic", align_corners=False,
// no antialiasing): cubic convolution with a = −0.75, pixel centres at +½, edges clamped.
Matrix interpolate_pos_embed(const Matrix& pos, int grid_h, int grid_w, int new_h, int new_w);

}  // namespace vitattn
