#pragma once
// What to draw from a model, and whether a request fits it: the layer and head, the model
// input size, the patch cap. Checked once before any image is read, and per image where the
// image's shape matters (keep_aspect).
#include <optional>
#include <string>
#include <utility>

#include "core/attention_maps.hpp"
#include "core/vit.hpp"

namespace vitattn::pipeline {

// The values an Error from the view checks may be about (core/error.hpp's Subject); the
// command line maps each to its flag.
namespace roles {
inline constexpr const char* layer = "layer";
inline constexpr const char* head = "head";
inline constexpr const char* input_size = "input size";
inline constexpr const char* keep_aspect = "keeping the aspect ratio";
}  // namespace roles

enum class HeadChoice { index, fuse, all };

// One layer's head or fused heads, or the rollout up to it.
struct EncoderView {
  int layer = -1;                 // −1 = last; negative counts from the end
  HeadChoice head = HeadChoice::fuse;
  int head_index = 0;             // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;
  bool rollout = false;
  float discard_ratio = 0.0f;
  std::optional<float> threshold; // DINO mass mask, drawn as an outline
  int img_size = 0;               // 0: the model's own size
  bool keep_aspect = false;       // shorter side = img_size, longer side to the nearest patch multiple
};

inline constexpr int kMaxPatches = 4096;  // 64×64: attention matrices stay under 64 MiB per head

// The layer index `layer` means in a model of n_layers (negative counts from the end);
// throws Error about roles::layer when out of range.
int resolve_layer(int layer, int n_layers);

// Throws Error about the role (layer, head, input size) that does not fit the model:
// a layer or head it does not have, an input size that is not a multiple of its patch size or
// that makes more than kMaxPatches patches (its own grid too, when img_size is 0). `source`
// names the model in messages.
void check_view(const VitModel& model, const EncoderView& view, const std::string& source);

// The model input (width, height) for an image of (width, height): S×S, or with keep_aspect
// the shorter side S and the longer rounded to the nearest multiple of P. Throws Error
// about roles::keep_aspect when that would take more than kMaxPatches patches.
std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect);

}  // namespace vitattn::pipeline
