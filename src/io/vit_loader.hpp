#pragma once
// Loads a ViT encoder checkpoint (timm, DINO, DINOv2, Hugging Face, torchvision, tintn) from
// safetensors by recognising its naming (checkpoint_families.hpp).
#include <filesystem>
#include <optional>
#include <string>

#include "checkpoint_families.hpp"
#include "core/vit.hpp"
#include "safetensors.hpp"

namespace vitattn::io {

struct VitOverrides {
  std::string family;          // empty: recognise from the tensor names
  int heads = 0;               // 0: from __metadata__, else d_model / 64
  std::optional<float> eps;    // LayerNorm ε
  std::optional<Gelu> gelu;
  std::optional<PosInterp> pos_interp;
};

struct LoadedVit {
  VitModel model;
  std::string family;          // the family's name
  std::string prefix;          // e.g. "vit." for ViTForImageClassification
  std::string heads_from;      // where the head count came from, for -v
  bool heads_guessed = false;  // the file did not say and no --heads: D/64, which may be wrong
  std::string summary() const; // one line for -v: family, sizes, ε, GELU, mean/std
};

// "bicubic", "bicubic-antialias" (timm), "bicubic-offset" (DINO), "bicubic-corners" (torchvision)
const char* pos_interp_name(PosInterp p);
std::optional<PosInterp> pos_interp_by_name(const std::string& name);

// True when the file holds an encoder, not the native single-head layout (attn.{q,k,v}.weight).
bool is_encoder_checkpoint(const SafeTensors& st);

// Throws Error "PATH: …" naming the missing or misshaped tensor.
LoadedVit load_vit(const SafeTensors& st, const VitOverrides& overrides = {});

}  // namespace vitattn::io
