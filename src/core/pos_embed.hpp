#pragma once
// Position embeddings for a patch grid other than the one the model was trained on.
#include "tensor.hpp"

namespace vitattn {

// Each library resamples its position embeddings its own way; vitattn follows the one the
// checkpoint comes from. All are bicubic (torch.nn.functional.interpolate, mode="bicubic"):
enum class PosInterp {
  bicubic,        // size=…, align_corners=False: cubic convolution a = −0.75, pixel centres at +½ (HF ViT)
  antialias,      // the same with antialias=True: PIL's filter (a = −0.5, widened when shrinking) (timm)
  offset,         // scale_factor=(n+0.1)/m instead of size=n, as DINO and DINOv2 do
  align_corners,  // align_corners=True: corner samples stay put (torchvision's interpolate_embeddings)
};

// pos (grid_h·grid_w, d_model), raster order → (new_h·new_w, d_model)
Matrix interpolate_pos_embed(const Matrix& pos, int grid_h, int grid_w, int new_h, int new_w,
                             PosInterp mode = PosInterp::bicubic);

}  // namespace vitattn
