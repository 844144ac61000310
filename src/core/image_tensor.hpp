#pragma once
// A normalised image as the model sees it: float, planar, (3, height, width), RGB.
#include <array>
#include <cstdint>
#include <vector>

namespace vitattn {

struct ImageTensor {
  int height = 0;
  int width = 0;
  std::vector<float> chw;  // (3, height, width): chw[(c*height + y)*width + x]

  float at(int c, int y, int x) const {
    return chw[static_cast<std::size_t>((c * height + y) * width + x)];
  }
};

struct Normalization {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // ImageNet, RGB order
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// rgb (height, width, 3) interleaved 8-bit → x[c] = (u8/255 − mean[c]) / std[c]
ImageTensor normalize_rgb(const std::uint8_t* rgb, int height, int width, const Normalization& norm);

}  // namespace vitattn
