#include "model/checkpoint_families.hpp"

namespace vitattn::io {
namespace {

constexpr Normalization kImageNet{};
constexpr Normalization kHalf{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};  // timm "augreg", HF ViT, tintn
// OpenAI CLIP's (clip/clip.py _transform; open_clip OPENAI_DATASET_MEAN/STD; HF CLIPImageProcessor).
constexpr Normalization kClip{{0.48145466f, 0.4578275f, 0.40821073f}, {0.26862954f, 0.26130258f, 0.27577711f}};

// CLIP's image towers: OpenAI CLIP and OpenCLIP (visual.*), and Hugging Face CLIP (vision_model.*).
// Both: a class embedding [D] and positions [1 + N, D], no patch bias, ln_pre before the first
// block, ln_post on the tokens (the class token's row is what CLIP pools), a projection to the
// joint embedding. The text tower's tensors are outside these names and left alone.
void add_clip_families(std::vector<CheckpointFamily>& f) {
  f.push_back({"clip", "OpenAI CLIP / OpenCLIP ViT image tower (visual.*; the text tower is not read)",
               {"visual.", ""}, "conv1", "class_embedding", "positional_embedding", {}, "transformer.resblocks.{i}.",
               {"ln_1", {"attn.in_proj_"}, "attn.out_proj", "ls_1.gamma", "ln_2", "mlp.c_fc", "mlp.c_proj", {},
                "ls_2.gamma"},
               "ln_post", "", 1e-5f, Gelu::quick, kClip});
  f.back().pos_interp = PosInterp::antialias;  // open_clip's resize_pos_embed (bicubic, antialias=True)
  f.back().class_position = true;
  f.back().detect_also = {"class_embedding"};  // a whole CLIP state dict's text tower is transformer.resblocks too
  f.back().flat_tokens = true;
  f.back().norm_pre = "ln_pre";
  f.back().embed = "proj";
  f.back().embed_transposed = true;  // x @ proj
  f.back().note = "GELU by default QuickGELU, as OpenAI's CLIP and OpenCLIP's quickgelu variants; OpenCLIP's other models "
                  "(e.g. the LAION-trained ones) use exact GELU: ask for the erf form (docs/families.md)";
  f.push_back({"hf-clip", "Hugging Face transformers CLIP image tower (CLIPVisionModel[WithProjection], CLIPModel)",
               {"vision_model.", ""}, "embeddings.patch_embedding", "embeddings.class_embedding",
               "embeddings.position_embedding.weight", {}, "encoder.layers.{i}.",
               {"layer_norm1", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}, "self_attn.out_proj", "",
                "layer_norm2", "mlp.fc1", "mlp.fc2", {}, ""},
               "post_layernorm", "", 1e-5f, Gelu::quick, kClip});
  f.back().model_types = {"clip", "clip_vision_model"};
  f.back().pos_interp = PosInterp::bicubic;  // CLIPVisionEmbeddings.interpolate_pos_encoding
  f.back().class_position = true;
  f.back().detect_also = {"embeddings.class_embedding"};  // SigLIP's blocks have the same names
  f.back().flat_tokens = true;
  f.back().norm_pre = "pre_layrnorm";  // sic
  f.back().embed = "visual_projection.weight";
  f.back().ignored = {"embeddings.position_ids"};  // a buffer older files saved
  f.back().note = "QuickGELU unless config.json's hidden_act says otherwise";
}

// timm's VisionTransformer(pre_norm=True), its CLIP towers (vit_*_clip_*): norm_pre on every token
// (class token, registers and patches, positions added) before the first block, CLIP's ln_pre.
// Most timm models have none (nn.Identity, no tensors). DINO's and DINOv2's own code has none.
void add_timm_pre_norm(CheckpointFamily& f) {
  f.norm_pre = "norm_pre";
  f.norm_pre_optional = true;
}

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
  add_timm_pre_norm(f.back());
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
  add_timm_pre_norm(f.back());  // VisionTransformerDistilled inherits forward_features, norm_pre included
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
  // DINOv3 (facebookresearch/dinov3 hub backbones dinov3_vits16/vitb16/vitl16): no position table but
  // RoPE on the patches' q and k, four storage tokens, layer scale, "layernormbf16" (ε 1e-5), the
  // qkv's key bias masked to zero by the stored bias_mask, 224 px by default.
  f.push_back({"dinov3", "DINOv3 ViT (facebookresearch/dinov3; RoPE, storage tokens)", {""}, "patch_embed.proj", "cls_token",
               "", {"storage_tokens"}, "blocks.{i}.", kTimmBlock, "norm", "", 1e-5f, Gelu::erf, kImageNet});
  f.back().rope = true;
  f.back().rope_periods = "rope_embed.periods";
  f.back().image_size = 224;
  f.back().qkv_bias_mask = "attn.qkv.bias_mask";
  f.back().unread = {"mask_token", "local_cls_norm.weight", "local_cls_norm.bias"};  // training only
  f.back().unsupported = {"blocks.0.mlp.w1.weight", "cls_norm.weight"};
  f.back().unsupported_why = "SwiGLU MLPs (ViT-S+/H+/7B) and a separate class-token norm are not computed by vitattn";
  // Hugging Face DINOv3ViTModel: the same model; k_proj has no bias (config key_bias false).
  f.push_back({"hf-dinov3", "Hugging Face transformers DINOv3ViTModel", {"", "dinov3_vit."}, "embeddings.patch_embeddings",
               "embeddings.cls_token", "", {"embeddings.register_tokens"}, "layer.{i}.",
               {"norm1", {"attention.q_proj", "attention.k_proj", "attention.v_proj"}, "attention.o_proj",
                "layer_scale1.lambda1", "norm2", "mlp.up_proj", "mlp.down_proj", {}, "layer_scale2.lambda1"},
               "norm", "", 1e-5f, Gelu::erf, kImageNet});
  f.back().model_types = {"dinov3_vit"};
  f.back().rope = true;
  f.back().image_size = 224;
  f.back().key_bias = false;
  f.back().unread = {"embeddings.mask_token"};
  f.back().unsupported = {"layer.0.mlp.gate_proj.weight"};
  f.back().unsupported_why = "gated (SwiGLU) MLPs (use_gated_mlp) are not computed by vitattn";
  f.push_back({"torchvision", "torchvision VisionTransformer (vit_b_16 …)", {""}, "conv_proj", "class_token",
               "encoder.pos_embedding", {}, "encoder.layers.encoder_layer_{i}.",
               {"ln_1", {"self_attention.in_proj_"}, "self_attention.out_proj", "", "ln_2", "mlp.0", "mlp.3",
                {"mlp.linear_1", "mlp.linear_2"}, ""},
               "encoder.ln", "heads.head", 1e-6f, Gelu::erf, kImageNet});
  f.back().pos_interp = PosInterp::align_corners;  // torchvision's interpolate_embeddings
  // SigLIP (and SigLIP 2 at a fixed resolution, which uses the same SiglipModel): no class token,
  // positions an nn.Embedding [N, D], the image pooled by a learned probe (HF modeling_siglip.py).
  f.push_back({"siglip", "Hugging Face SigLIP / SigLIP 2 vision tower (SiglipVisionModel, SiglipModel)",
               {"vision_model.", ""}, "embeddings.patch_embedding", "", "embeddings.position_embedding.weight", {},
               "encoder.layers.{i}.",
               {"layer_norm1", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}, "self_attn.out_proj", "",
                "layer_norm2", "mlp.fc1", "mlp.fc2", {}, ""},
               "post_layernorm", "", 1e-6f, Gelu::tanh, kHalf});
  f.back().model_types = {"siglip", "siglip_vision_model"};
  f.back().pos_interp = PosInterp::bicubic;  // SiglipVisionEmbeddings.interpolate_pos_encoding
  f.back().probe_head = "head";
  f.back().flat_tokens = true;  // positions [N, D]
  f.push_back({"tintn", "tintn vision-transformer-from-scratch (the CIFAR-10 test model)", {""},
               "embedding.patch_embeddings.projection", "embedding.cls_token", "embedding.position_embeddings", {},
               "encoder.blocks.{i}.",
               {"layernorm_1", {"attention.qkv_projection"}, "attention.output_projection", "", "layernorm_2",
                "mlp.dense_1", "mlp.dense_2", {}, ""},
               "", "classifier", 1e-5f, Gelu::tanh, kHalf});
  add_clip_families(f);
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
