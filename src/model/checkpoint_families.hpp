#pragma once
// The checkpoint namings vitattn reads, as data: for each family, which tensor plays which
// role, and the family's defaults. A new naming is a new table entry, not new math.
#include <optional>
#include <string>
#include <vector>

#include "core/image_tensor.hpp"
#include "core/layers.hpp"
#include "core/pos_embed.hpp"
#include "core/vit.hpp"

namespace vitattn::io {

// Names inside one block, relative to the block's prefix. Empty: the block has no such tensor.
struct BlockNaming {
  std::string norm1;                  // LayerNorm before attention: <name>.weight / <name>.bias; empty: none
  std::vector<std::string> qkv;       // one packed [Q; K; V] linear, or three (query, key, value)
  std::string proj;                   // attention output linear; empty: none (attention-only block)
  std::string ls1;                    // layer scale γ of the attention branch (full tensor name)
  std::string norm2;                  // empty (with fc1, fc2): no MLP
  std::string fc1, fc2;               // MLP linears
  std::vector<std::string> fc_alt;    // alternative names of fc1, fc2 (older releases)
  std::string ls2;
};

struct CheckpointFamily {
  std::string name;                   // what --family takes and -v prints
  std::string description;
  std::vector<std::string> prefixes;  // tried in order, e.g. "vit." then ""
  std::string patch_embed;            // Conv2d: <name>.weight [D, 3, P, P], <name>.bias
  std::string cls_token;              // [1, 1, D]
  std::string pos_embed;              // [1, (1 +) N, D]
  std::vector<std::string> registers; // [1, R, D], any of these names
  std::string block;                  // block prefix with "{i}" for the index; without "{i}": one block
  BlockNaming block_naming;
  std::string final_norm;             // empty: no final norm
  std::string head;                   // classifier linear; empty: none read
  // Defaults, each overridable from the command line.
  float eps = 1e-6f;
  Gelu gelu = Gelu::erf;
  Normalization norm;                 // ImageNet unless set
  PosInterp pos_interp = PosInterp::bicubic;  // how the family's library resamples positions
  int heads = 0;                      // head count when the file does not say; 0: guess D/64
  bool class_position = false;        // positions must include the class token's ([1, 1 + N, D])
  // Every linear has its bias (the qkv's, which some models lack, in every block or in none;
  // layout_check.hpp). False: each bias is optional (the single-head layout).
  bool biases = true;
  std::vector<std::string> model_types = {};  // config.json's model_type values that name this family (hf:)
  // The pooled heads (vit_head.hpp). What `head` reads when the file has neither a distillation
  // head nor fc_norm: the class token's row, or [class token, mean of the patches] (2·D wide).
  Pooling head_pooling = {};
  std::string dist_token = {};        // [1, 1, D] distilled DeiT's second leading token; empty: none named
  std::string head_dist = {};         // its classifier linear [n_classes, D] (with `head`: class_and_dist)
  std::string fc_norm = {};           // LayerNorm after the mean of the patches (timm global_pool='avg'):
                                      // present in the file → Pooling::patch_mean, the final norm absent
};

// A linear's tensors: "attn.qkv" → "attn.qkv.weight"; torchvision's "in_proj_" → "in_proj_weight".
std::string weight_of(const std::string& linear);
std::string bias_of(const std::string& linear);

// The native single-head layout (models/README.md): what --save-model writes.
inline constexpr const char* kNativeFamily = "single-head";

// Every family, in the order detection tries them.
const std::vector<CheckpointFamily>& checkpoint_families();
const CheckpointFamily* family_by_name(const std::string& name);
// The family config.json's model_type names, or nullptr.
const CheckpointFamily* family_by_model_type(const std::string& model_type);
std::vector<std::string> family_names();

}  // namespace vitattn::io
