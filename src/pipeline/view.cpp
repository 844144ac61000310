#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace vitattn::pipeline {

int resolve_layer(int layer, int n_layers) {
  const int l = layer < 0 ? n_layers + layer : layer;
  if (l < 0 || l >= n_layers)
    throw Error({roles::layer, std::to_string(layer)},
                      "the model has layers 0…" + std::to_string(n_layers - 1) + " (or −1…−" +
                          std::to_string(n_layers) + " from the end)");
  return l;
}

void check_view(const VitModel& model, const EncoderView& view, const std::string& source) {
  resolve_layer(view.layer, model.n_layers());
  if (view.head == HeadChoice::index && view.head_index >= model.n_heads)
    throw Error({roles::head, std::to_string(view.head_index)},
                      "the model has heads 0…" + std::to_string(model.n_heads - 1));
  const int p = model.patch_size;
  if (view.img_size == 0) {
    if (model.grid_h * model.grid_w > kMaxPatches)
      throw Error({roles::input_size, ""},
                        fmt::format("its own grid is {}x{} = {} patches, over the cap of {}; give a smaller input size",
                                    model.grid_w, model.grid_h, model.grid_w * model.grid_h, kMaxPatches),
                        source);
    return;
  }
  const std::string s = std::to_string(view.img_size);
  if (view.img_size % p != 0)
    throw Error({roles::input_size, s}, "not a multiple of the patch size " + std::to_string(p));
  if ((view.img_size / p) * (view.img_size / p) > kMaxPatches)
    throw Error({roles::input_size, s},
                      "makes more than " + std::to_string(kMaxPatches) + " patches of " + std::to_string(p) + " pixels");
}

std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect) {
  int w = img_size, h = img_size;
  if (keep_aspect) {
    const double aspect = static_cast<double>(std::max(image_w, image_h)) / std::min(image_w, image_h);
    const double longer = std::max(1.0, std::round(img_size * aspect / patch_size)) * patch_size;
    const double along = longer / patch_size, across = img_size / patch_size;  // patches (double: a 10⁸:1 image)
    if (along * across > kMaxPatches) {
      const bool wide = image_w >= image_h;
      // The caller may add the role's flag at the end: the advice ends on the role's own words.
      throw Error({roles::keep_aspect, ""},
                  fmt::format("with its aspect ratio kept, a {}x{} image at input size {} makes a {:.0f}x{:.0f} grid, "
                              "{:.0f} patches, over the cap of {}; give a smaller input size, or do not keep the aspect "
                              "ratio",
                              image_w, image_h, img_size, wide ? along : across, wide ? across : along, along * across,
                              kMaxPatches));
    }
    (image_w >= image_h ? w : h) = static_cast<int>(longer);
  }
  return {w, h};
}

}  // namespace vitattn::pipeline
