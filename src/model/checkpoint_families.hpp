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

namespace vitattn::model {

// Names inside one block, relative to the block's prefix. Empty: the block has no such tensor.
// Every field here and in CheckpointFamily has a default (`= {}`: empty), so that a family's row in
// the table (checkpoint_families.cpp, designated initialisers) names only what the family has.
struct BlockNaming {
  std::string norm1 = {};             // LayerNorm before attention: <name>.weight / <name>.bias; empty: none
  std::vector<std::string> qkv = {};  // one packed [Q; K; V] linear, or three (query, key, value)
  std::string proj = {};              // attention output linear; empty: none (attention-only block)
  std::string ls1 = {};               // layer scale γ of the attention branch (full tensor name)
  std::string norm2 = {};             // empty (with fc1, fc2): no MLP
  std::string fc1 = {}, fc2 = {};     // MLP linears
  std::vector<std::string> fc_alt = {}; // alternative names of fc1, fc2 (older releases)
  std::string ls2 = {};
};

struct CheckpointFamily {
  std::string name = {};              // what --family takes and -v prints
  std::string description = {};
  std::vector<std::string> prefixes = {}; // tried in order, e.g. "vit." then ""
  std::string patch_embed = {};       // Conv2d: <name>.weight [D, 3, P, P], <name>.bias
  std::string cls_token = {};         // [1, 1, D]; empty: the model has none (SigLIP)
  std::string pos_embed = {};         // [1, (1 +) N, D], or [N, D] (an nn.Embedding's weight)
  std::vector<std::string> registers = {}; // [1, R, D], any of these names
  std::string block = {};             // block prefix with "{i}" for the index; without "{i}": one block
  BlockNaming block_naming = {};
  std::string final_norm = {};        // empty: no final norm
  std::string head = {};              // classifier linear; empty: none read
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
  // Tensors (under the prefix) detection also requires beside the first block: for namings whose
  // blocks look like another family's (HF CLIP's and SigLIP's "vision_model.encoder.layers"), or
  // like a text tower's (CLIP's "transformer.resblocks" at the top of a whole CLIP state dict).
  std::vector<std::string> detect_also = {};
  // The class token is [D] and the positions [1 + N, D] (CLIP, HF CLIP), not [1, 1, D], [1, 1 + N, D].
  bool flat_tokens = false;
  std::string norm_pre = {};          // LayerNorm after the embedding, before block 0 (CLIP's ln_pre); empty: none
  bool norm_pre_optional = false;     // only some of the family's models have it (timm's pre_norm=True): whole
                                      // or absent; else every model has it
  // The projection into the joint image-text space, a bias-free weight (full tensor name), under the
  // prefix or at the top (HF's visual_projection sits outside vision_model.); empty: none read.
  std::string embed = {};
  bool embed_transposed = false;      // stored [D, E] and applied as x·proj (CLIP's visual.proj), not [E, D]
  std::vector<std::string> ignored = {};  // under the prefix, read by nobody (HF's position_ids buffer)
  std::string note = {};              // said by -v: a default the file cannot confirm, and how to change it
  // SigLIP's attention-pooling head (core/vit.hpp ProbeHead), relative to the prefix: <name>.probe,
  // <name>.attention.in_proj_weight/bias, .attention.out_proj, .layernorm, .mlp.fc1/fc2. Empty: none.
  // When set, the family is recognised only where <prefix><name>.probe is, and the model pools with it.
  std::string probe_head = {};
  // Rotary positions (DINOv3; core/rope.hpp) instead of a position table: pos_embed is empty.
  bool rope = false;
  std::string rope_periods = {};      // the periods [d_head/4] when the file holds them; else from rope_base
  float rope_base = 100.0f;           // periods base^(4k/d_head) (config.json's rope_theta overrides)
  int image_size = 0;                 // the default input size, when no position table gives a grid
  std::string qkv_bias_mask = {};     // block-relative [3·D] multiplied into the qkv bias (DINOv3's
                                      // LinearKMaskedBias: its key bias is masked to zero)
  bool key_bias = true;               // false: the key linear may have no bias (zero; HF DINOv3's k_proj)
  std::vector<std::string> unread = {};       // tensors the family's files hold that inference never reads
                                              // (a mask token for masked pre-training): taken, not reported
  std::vector<std::string> unsupported = {};  // tensors (block 0's) of variants vitattn does not compute
  std::string unsupported_why = {};           // said when the file holds one of them
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

}  // namespace vitattn::model
