#include "model/checkpoint_families.hpp"

namespace vitattn::io {
namespace {

constexpr Normalization kImageNet{};
constexpr Normalization kHalf{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};  // timm "augreg", HF ViT, tintn

const BlockNaming kTimmBlock{"norm1", {"attn.qkv"}, "attn.proj", "ls1.gamma", "norm2", "mlp.fc1", "mlp.fc2", {},
                             "ls2.gamma"};

std::vector<CheckpointFamily> make_families() {
  std::vector<CheckpointFamily> f;
  // vitattn's own layout: one attention-only block at the top level, one head of width d_k.
  f.push_back({kNativeFamily, "vitattn's own single-head layout (what save_model writes; models/README.md)", {""}, "patch_embed.proj",
               "cls_token", "pos_embed", {}, "", {"", {"attn.q", "attn.k", "attn.v"}, "", "", "", "", "", {}, ""}, "", "",
               1e-6f, Gelu::erf, kImageNet});
  f.back().heads = 1;
  f.back().class_position = true;
  f.back().biases = false;
  // timm's names are shared by timm ViT/DeiT, DINO and DINOv2; detection tells them apart
  // by what else the file holds (see vit_loader.cpp), their defaults differ.
  f.push_back({"timm", "timm ViT / DeiT (augreg normalisation 0.5/0.5)", {""}, "patch_embed.proj", "cls_token",
               "pos_embed", {"reg_token", "register_tokens"}, "blocks.{i}.", kTimmBlock, "norm", "head", 1e-6f,
               Gelu::erf, kHalf});
  f.back().pos_interp = PosInterp::antialias;  // timm's resample_abs_pos_embed
  f.back().fc_norm = "fc_norm";                // global_pool='avg': head(fc_norm(mean of the patches)), no "norm"
  f.push_back({"dino", "DINO v1 / DeiT (ImageNet normalisation)", {""}, "patch_embed.proj", "cls_token", "pos_embed",
               {"reg_token", "register_tokens"}, "blocks.{i}.", kTimmBlock, "norm", "head", 1e-6f, Gelu::erf,
               kImageNet});
  f.back().pos_interp = PosInterp::offset;  // DINO's interpolate_pos_encoding
  f.push_back({"dinov2", "DINOv2, with or without registers", {""}, "patch_embed.proj", "cls_token", "pos_embed",
               {"register_tokens", "reg_token"}, "blocks.{i}.", kTimmBlock, "norm", "head", 1e-6f, Gelu::erf,
               kImageNet});
  f.back().pos_interp = PosInterp::offset;  // DINOv2's interpolate_pos_encoding (interpolate_offset 0.1)
  // timm's VisionTransformerDistilled (deit_*_distilled_*): the timm names plus a distillation
  // token after the class token (positions for both) and its own head; in eval mode the
  // logits are the mean of the two heads'. DeiT trains with ImageNet normalisation.
  f.push_back({"deit-distilled", "timm distilled DeiT (dist_token, head_dist)", {""}, "patch_embed.proj", "cls_token",
               "pos_embed", {}, "blocks.{i}.", kTimmBlock, "norm", "head", 1e-6f, Gelu::erf, kImageNet});
  f.back().pos_interp = PosInterp::antialias;  // timm's resample_abs_pos_embed, num_prefix_tokens 2
  f.back().dist_token = "dist_token";
  f.back().head_dist = "head_dist";
  f.push_back({"hf-vit", "Hugging Face transformers ViT (ViTModel, ViTForImageClassification)",
               {"vit.", ""}, "embeddings.patch_embeddings.projection", "embeddings.cls_token",
               "embeddings.position_embeddings", {}, "encoder.layer.{i}.",
               {"layernorm_before",
                {"attention.attention.query", "attention.attention.key", "attention.attention.value"},
                "attention.output.dense", "", "layernorm_after", "intermediate.dense", "output.dense", {}, ""},
               "layernorm", "classifier", 1e-12f, Gelu::erf, kHalf});
  f.back().model_types = {"vit"};
  f.push_back({"hf-dinov2", "Hugging Face transformers Dinov2 (with or without registers)",
               {"dinov2.", "dinov2_with_registers.", ""},
               "embeddings.patch_embeddings.projection", "embeddings.cls_token", "embeddings.position_embeddings",
               {"embeddings.register_tokens"}, "encoder.layer.{i}.",
               {"norm1",
                {"attention.attention.query", "attention.attention.key", "attention.attention.value"},
                "attention.output.dense", "layer_scale1.lambda1", "norm2", "mlp.fc1", "mlp.fc2", {},
                "layer_scale2.lambda1"},
               "layernorm", "classifier", 1e-6f, Gelu::erf, kImageNet});
  f.back().model_types = {"dinov2", "dinov2_with_registers"};
  // Dinov2ForImageClassification's classifier reads [cls, mean of the patches] (2·D wide); the
  // patches are the tokens after the registers (modeling_dinov2_with_registers.py).
  f.back().head_pooling = Pooling::class_and_patch_mean;
  f.back().pos_interp = PosInterp::offset;  // ported from DINOv2
  f.push_back({"torchvision", "torchvision VisionTransformer (vit_b_16 …)", {""}, "conv_proj", "class_token",
               "encoder.pos_embedding", {}, "encoder.layers.encoder_layer_{i}.",
               {"ln_1", {"self_attention.in_proj_"}, "self_attention.out_proj", "", "ln_2", "mlp.0", "mlp.3",
                {"mlp.linear_1", "mlp.linear_2"}, ""},
               "encoder.ln", "heads.head", 1e-6f, Gelu::erf, kImageNet});
  f.back().pos_interp = PosInterp::align_corners;  // torchvision's interpolate_embeddings
  f.push_back({"tintn", "tintn vision-transformer-from-scratch (the CIFAR-10 test model)", {""},
               "embedding.patch_embeddings.projection", "embedding.cls_token", "embedding.position_embeddings", {},
               "encoder.blocks.{i}.",
               {"layernorm_1", {"attention.qkv_projection"}, "attention.output_projection", "", "layernorm_2",
                "mlp.dense_1", "mlp.dense_2", {}, ""},
               "", "classifier", 1e-5f, Gelu::tanh, kHalf});
  return f;
}

}  // namespace

std::string weight_of(const std::string& linear) { return linear + (linear.ends_with('_') ? "" : ".") + "weight"; }
std::string bias_of(const std::string& linear) { return linear + (linear.ends_with('_') ? "" : ".") + "bias"; }

const std::vector<CheckpointFamily>& checkpoint_families() {
  static const std::vector<CheckpointFamily> families = make_families();
  return families;
}

const CheckpointFamily* family_by_model_type(const std::string& model_type) {
  for (const auto& f : checkpoint_families())
    for (const auto& t : f.model_types)
      if (t == model_type) return &f;
  return nullptr;
}

const CheckpointFamily* family_by_name(const std::string& name) {
  for (const auto& f : checkpoint_families())
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const auto& f : checkpoint_families()) names.push_back(f.name);
  return names;
}

}  // namespace vitattn::io
