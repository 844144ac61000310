#include "image_tensor.hpp"

#include <cstddef>

namespace vitattn {

ImageTensor normalize_rgb(const std::uint8_t* rgb, int height, int width, const Normalization& norm) {
  ImageTensor t;
  t.height = height;
  t.width = width;
  const auto plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  t.chw.resize(3 * plane);
  for (std::size_t c = 0; c < 3; ++c) {
    const float mean = norm.mean[c];
    const float std = norm.std[c];
    for (std::size_t i = 0; i < plane; ++i)
      t.chw[c * plane + i] = (static_cast<float>(rgb[3 * i + c]) / 255.0f - mean) / std;
  }
  return t;
}

}  // namespace vitattn
