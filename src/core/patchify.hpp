#pragma once
// An image cut into the patches a ViT embeds.
#include "image_tensor.hpp"
#include "tensor.hpp"

namespace vitattn {

// image (3, H, W) → patches ((H/P)·(W/P), 3·P·P), raster order, each flattened (c, y, x)
Matrix patchify(const ImageTensor& image, int patch_size);

}  // namespace vitattn
