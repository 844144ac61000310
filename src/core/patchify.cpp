#include "patchify.hpp"

#include <string>

#include "error.hpp"

namespace vitattn {

Matrix patchify(const ImageTensor& image, int patch_size) {
  if (patch_size <= 0 || image.height % patch_size != 0 || image.width % patch_size != 0)
    throw Error("patchify: image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                " is not a whole number of " + std::to_string(patch_size) + "-pixel patches");
  const int grid_h = image.height / patch_size;
  const int grid_w = image.width / patch_size;
  const int p = patch_size;
  Matrix patches(grid_h * grid_w, 3 * p * p);
  for (int gy = 0; gy < grid_h; ++gy)
    for (int gx = 0; gx < grid_w; ++gx) {
      const int row = gy * grid_w + gx;  // raster order: top row of patches first
      int col = 0;
      for (int c = 0; c < 3; ++c)  // (channel, y, x): the layout of a Conv2d weight
        for (int y = 0; y < p; ++y)
          for (int x = 0; x < p; ++x) patches(row, col++) = image.at(c, gy * p + y, gx * p + x);
    }
  return patches;
}

}  // namespace vitattn
