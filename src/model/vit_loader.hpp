#pragma once
// Loads a model from safetensors by recognising its naming (checkpoint_families.hpp): a ViT
// encoder checkpoint (timm, DINO, DINOv2, Hugging Face, torchvision, tintn) or vitattn's own
// single-head layout.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint_families.hpp"
#include "core/vit.hpp"
#include "tensors/safetensors.hpp"

namespace vitattn::model {

namespace roles {
inline constexpr const char* head_count = "head count";  // an Error's Subject (core/error.hpp): the count asked for
}  // namespace roles

struct VitOverrides {
  std::string family;          // empty: recognise from the tensor names
  std::string family_hint;     // tried first when `family` is empty (config.json's model_type); a file
                               // without its naming is recognised from the names as if none were given
  int heads = 0;               // over __metadata__'s; 0: from __metadata__, else the family's, else d_model / 64
  std::optional<float> eps;    // LayerNorm ε
  std::optional<Gelu> gelu;
  std::optional<PosInterp> pos_interp;
  std::optional<float> rope_base;  // RoPE's base (config.json's rope_theta), for a family whose file lacks the periods
};

struct LoadedVit {
  VitModel model;
  std::string family;          // the family's name
  std::string prefix;          // e.g. "vit." for ViTForImageClassification
  std::string heads_from;      // where the head count came from, for -v
  bool heads_guessed = false;  // neither the file nor the overrides said: D/64, which may be wrong
  std::vector<std::string> outside;  // tensors outside the encoder's names, not read (layout_check.hpp)
  std::string summary() const; // one line for -v: family, sizes, ε, GELU, mean/std
};

// "bicubic", "bicubic-antialias" (timm), "bicubic-offset" (DINO), "bicubic-corners" (torchvision)
const char* pos_interp_name(PosInterp p);
std::optional<PosInterp> pos_interp_by_name(const std::string& name);

// The head count the file's __metadata__ gives (num_heads, or heads), if any.
std::optional<long> metadata_heads(const tensors::TensorFile& st);

// Reads every tensor the family names, checking its shape and, as it is read, its values (a
// NaN or infinity names the tensor). The whole model is not validated here: open_model does
// that once, after the settings that come later (config files, the caller's). Throws Error
// "PATH: …" naming the missing or misshaped tensor (first the whole layout, on the names:
// layout_check.hpp); Error about roles::head_count when the head count asked for, or the lack
// of one, does not fit the file. A head count asked for wins over __metadata__'s.
LoadedVit load_vit(const tensors::TensorFile& st, const VitOverrides& overrides = {});

}  // namespace vitattn::model
