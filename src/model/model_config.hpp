#pragma once
// What a model's config.json and preprocessor_config.json (Hugging Face transformers, or timm's
// config.json with its pretrained_cfg) say about it, so that such a model needs no
// --heads/--eps/--mean/--std. Both files sit beside the weights (a hub snapshot folder).
// A vision-language model's config (CLIPModel, SiglipModel) keeps the image tower's settings
// in its "vision_config": those are the ones read, model_type from the top.
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/layers.hpp"

namespace vitattn::model {

struct ModelConfig {
  int heads = 0;                              // num_attention_heads (HF), model_args.num_heads (timm); 0: not said
  int image_size = 0;                         // image_size (HF), pretrained_cfg.input_size (timm)
  int patch_size = 0;                         // patch_size
  int hidden_size = 0;                        // hidden_size (HF): D; 0: not said
  int layers = 0;                             // num_hidden_layers (HF)
  int intermediate_size = 0;                  // intermediate_size (HF): d_mlp
  std::filesystem::path config_json;          // the config.json read; empty: none
  std::optional<float> eps;                   // layer_norm_eps
  std::string model_type;                     // model_type (HF): picks the family (CheckpointFamily::model_types)
  std::optional<Gelu> activation;             // hidden_act (HF): gelu, quick_gelu, gelu_pytorch_tanh, gelu_new
  std::optional<float> rope_theta;            // rope_theta (HF DINOv3): RoPE's base
  int projection_dim = 0;                     // projection_dim (HF CLIP): d_embed
  int text_heads = 0;                         // text_config.num_attention_heads (HF CLIPModel, SiglipModel); 0: not said
  std::optional<float> text_eps;              // text_config.layer_norm_eps
  std::optional<Gelu> text_activation;        // text_config.hidden_act
  std::optional<std::array<float, 3>> mean;   // image_mean (preprocessor), pretrained_cfg.mean (timm)
  std::optional<std::array<float, 3>> std;    // image_std, pretrained_cfg.std
  std::string sources;                        // the files read, for -v; empty when none was there
};

// The files read_model_config reads in `dir`, there or not: dir/config.json, dir/preprocessor_config.json.
std::vector<std::filesystem::path> model_config_files(const std::filesystem::path& dir);

// Reads dir/config.json and dir/preprocessor_config.json when present. Throws Error naming the
// file when one is not JSON or a value has the wrong type or range.
ModelConfig read_model_config(const std::filesystem::path& dir);

}  // namespace vitattn::model
