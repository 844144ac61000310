#include "model/checkpoint_families.hpp"

namespace vitattn::model {
namespace {

constexpr Normalization kImageNet{};
constexpr Normalization kHalf{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}};  // timm "augreg", HF ViT, tintn
// OpenAI CLIP's (clip/clip.py _transform; open_clip OPENAI_DATASET_MEAN/STD; HF CLIPImageProcessor).
constexpr Normalization kClip{{0.48145466f, 0.4578275f, 0.40821073f}, {0.26862954f, 0.26130258f, 0.27577711f}};

const BlockNaming kTimmBlock{.norm1 = "norm1", .qkv = {"attn.qkv"}, .proj = "attn.proj", .ls1 = "ls1.gamma",
                             .norm2 = "norm2", .fc1 = "mlp.fc1", .fc2 = "mlp.fc2", .ls2 = "ls2.gamma"};
// Hugging Face's CLIPEncoderLayer names, which SiglipEncoderLayer keeps.
const BlockNaming kHfClipBlock{.norm1 = "layer_norm1",
                               .qkv = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                               .proj = "self_attn.out_proj",
                               .norm2 = "layer_norm2",
                               .fc1 = "mlp.fc1",
                               .fc2 = "mlp.fc2"};
// Hugging Face's ViTAttention names (query, key, value; the output linear), which Dinov2Layer
// keeps; their norms and MLPs differ.
const std::vector<std::string> kHfViTQkv{"attention.attention.query", "attention.attention.key",
                                         "attention.attention.value"};
const std::string kHfViTProj = "attention.output.dense";

// One row per family, in the order detection tries them, its fields in their declaration order
// (checkpoint_families.hpp). A field at the struct's default is left out, except the
// normalisation, which every row names, and a default whose comment says where it comes from.
std::vector<CheckpointFamily> make_families() {
  return {
      // vitattn's own layout: one attention-only block at the top level, one head of width d_k.
      {.name = kNativeFamily,
       .description = "vitattn's own single-head layout (what save_model writes; models/README.md)",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .pos_embed = "pos_embed",
       .block_naming = {.qkv = {"attn.q", "attn.k", "attn.v"}},
       .norm = kImageNet,
       .heads = 1,
       .class_position = true,
       .biases = false},
      // timm's names are shared by timm ViT/DeiT, DINO and DINOv2; detection tells them apart
      // by what else the file holds (see vit_loader.cpp), their defaults differ.
      {.name = "timm",
       .description = "timm ViT / DeiT (augreg normalisation 0.5/0.5)",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .pos_embed = "pos_embed",
       .registers = {"reg_token", "register_tokens"},
       .block = "blocks.{i}.",
       .block_naming = kTimmBlock,
       .final_norm = "norm",
       .head = "head",
       .norm = kHalf,
       .pos_interp = PosInterp::antialias,  // timm's resample_abs_pos_embed
       // timm's VisionTransformer(pre_norm=True), its CLIP towers (vit_*_clip_*): norm_pre on every
       // token (class token, registers and patches, positions added) before the first block, CLIP's
       // ln_pre. Most timm models have none (nn.Identity, no tensors).
       .norm_pre = "norm_pre",
       .norm_pre_optional = true,
       .fc_norm = "fc_norm"},  // global_pool='avg': head(fc_norm(mean of the patches)), no "norm"
      // DINO's and DINOv2's own code has no norm_pre.
      {.name = "dino",
       .description = "DINO v1 / DeiT (ImageNet normalisation)",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .pos_embed = "pos_embed",
       .registers = {"reg_token", "register_tokens"},
       .block = "blocks.{i}.",
       .block_naming = kTimmBlock,
       .final_norm = "norm",
       .head = "head",
       .norm = kImageNet,
       .pos_interp = PosInterp::offset},  // DINO's interpolate_pos_encoding
      {.name = "dinov2",
       .description = "DINOv2, with or without registers",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .pos_embed = "pos_embed",
       .registers = {"register_tokens", "reg_token"},
       .block = "blocks.{i}.",
       .block_naming = kTimmBlock,
       .final_norm = "norm",
       .head = "head",
       .norm = kImageNet,
       .pos_interp = PosInterp::offset},  // DINOv2's interpolate_pos_encoding (interpolate_offset 0.1)
      // timm's VisionTransformerDistilled (deit_*_distilled_*): the timm names plus a distillation
      // token after the class token (positions for both) and its own head; in eval mode the
      // logits are the mean of the two heads'. DeiT trains with ImageNet normalisation.
      {.name = "deit-distilled",
       .description = "timm distilled DeiT (dist_token, head_dist)",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .pos_embed = "pos_embed",
       .block = "blocks.{i}.",
       .block_naming = kTimmBlock,
       .final_norm = "norm",
       .head = "head",
       .norm = kImageNet,
       .pos_interp = PosInterp::antialias,  // timm's resample_abs_pos_embed, num_prefix_tokens 2
       .norm_pre = "norm_pre",              // VisionTransformerDistilled inherits forward_features, norm_pre
       .norm_pre_optional = true,           // included (timm's, above)
       .dist_token = "dist_token",
       .head_dist = "head_dist"},
      {.name = "hf-vit",
       .description = "Hugging Face transformers ViT (ViTModel, ViTForImageClassification)",
       .prefixes = {"vit.", ""},
       .patch_embed = "embeddings.patch_embeddings.projection",
       .cls_token = "embeddings.cls_token",
       .pos_embed = "embeddings.position_embeddings",
       .block = "encoder.layer.{i}.",
       .block_naming = {.norm1 = "layernorm_before",
                        .qkv = kHfViTQkv,
                        .proj = kHfViTProj,
                        .norm2 = "layernorm_after",
                        .fc1 = "intermediate.dense",
                        .fc2 = "output.dense"},
       .final_norm = "layernorm",
       .head = "classifier",
       .eps = 1e-12f,
       .norm = kHalf,
       .model_types = {"vit"}},
      {.name = "hf-dinov2",
       .description = "Hugging Face transformers Dinov2 (with or without registers)",
       .prefixes = {"dinov2.", "dinov2_with_registers.", ""},
       .patch_embed = "embeddings.patch_embeddings.projection",
       .cls_token = "embeddings.cls_token",
       .pos_embed = "embeddings.position_embeddings",
       .registers = {"embeddings.register_tokens"},
       .block = "encoder.layer.{i}.",
       .block_naming = {.norm1 = "norm1",
                        .qkv = kHfViTQkv,
                        .proj = kHfViTProj,
                        .ls1 = "layer_scale1.lambda1",
                        .norm2 = "norm2",
                        .fc1 = "mlp.fc1",
                        .fc2 = "mlp.fc2",
                        .ls2 = "layer_scale2.lambda1"},
       .final_norm = "layernorm",
       .head = "classifier",
       .norm = kImageNet,
       .pos_interp = PosInterp::offset,  // ported from DINOv2
       .model_types = {"dinov2", "dinov2_with_registers"},
       // Dinov2ForImageClassification's classifier reads [cls, mean of the patches] (2·D wide); the
       // patches are the tokens after the registers (modeling_dinov2_with_registers.py).
       .head_pooling = Pooling::class_and_patch_mean},
      // DINOv3 (facebookresearch/dinov3 hub backbones dinov3_vits16/vitb16/vitl16): no position table but
      // RoPE on the patches' q and k, four storage tokens, layer scale, "layernormbf16" (ε 1e-5), the
      // qkv's key bias masked to zero by the stored bias_mask, 224 px by default.
      {.name = "dinov3",
       .description = "DINOv3 ViT (facebookresearch/dinov3; RoPE, storage tokens)",
       .prefixes = {""},
       .patch_embed = "patch_embed.proj",
       .cls_token = "cls_token",
       .registers = {"storage_tokens"},
       .block = "blocks.{i}.",
       .block_naming = kTimmBlock,
       .final_norm = "norm",
       .eps = 1e-5f,
       .norm = kImageNet,
       .rope = true,
       .rope_periods = "rope_embed.periods",
       .image_size = 224,
       .qkv_bias_mask = "attn.qkv.bias_mask",
       .unread = {"mask_token", "local_cls_norm.weight", "local_cls_norm.bias"},  // training only
       .unsupported = {"blocks.0.mlp.w1.weight", "cls_norm.weight"},
       .unsupported_why = "SwiGLU MLPs (ViT-S+/H+/7B) and a separate class-token norm are not computed by vitattn"},
      // Hugging Face DINOv3ViTModel: the same model; k_proj has no bias (config key_bias false).
      {.name = "hf-dinov3",
       .description = "Hugging Face transformers DINOv3ViTModel",
       .prefixes = {"", "dinov3_vit."},
       .patch_embed = "embeddings.patch_embeddings",
       .cls_token = "embeddings.cls_token",
       .registers = {"embeddings.register_tokens"},
       .block = "layer.{i}.",
       .block_naming = {.norm1 = "norm1",
                        .qkv = {"attention.q_proj", "attention.k_proj", "attention.v_proj"},
                        .proj = "attention.o_proj",
                        .ls1 = "layer_scale1.lambda1",
                        .norm2 = "norm2",
                        .fc1 = "mlp.up_proj",
                        .fc2 = "mlp.down_proj",
                        .ls2 = "layer_scale2.lambda1"},
       .final_norm = "norm",
       .eps = 1e-5f,
       .norm = kImageNet,
       .model_types = {"dinov3_vit"},
       .rope = true,
       .image_size = 224,
       .key_bias = false,
       .unread = {"embeddings.mask_token"},
       .unsupported = {"layer.0.mlp.gate_proj.weight"},
       .unsupported_why = "gated (SwiGLU) MLPs (use_gated_mlp) are not computed by vitattn"},
      {.name = "torchvision",
       .description = "torchvision VisionTransformer (vit_b_16 …)",
       .prefixes = {""},
       .patch_embed = "conv_proj",
       .cls_token = "class_token",
       .pos_embed = "encoder.pos_embedding",
       .block = "encoder.layers.encoder_layer_{i}.",
       .block_naming = {.norm1 = "ln_1",
                        .qkv = {"self_attention.in_proj_"},
                        .proj = "self_attention.out_proj",
                        .norm2 = "ln_2",
                        .fc1 = "mlp.0",
                        .fc2 = "mlp.3",
                        .fc_alt = {"mlp.linear_1", "mlp.linear_2"}},
       .final_norm = "encoder.ln",
       .head = "heads.head",
       .norm = kImageNet,
       .pos_interp = PosInterp::align_corners},  // torchvision's interpolate_embeddings
      // SigLIP (and SigLIP 2 at a fixed resolution, which uses the same SiglipModel): no class token,
      // positions an nn.Embedding [N, D], the image pooled by a learned probe (HF modeling_siglip.py).
      {.name = "siglip",
       .description = "Hugging Face SigLIP / SigLIP 2 vision tower (SiglipVisionModel, SiglipModel)",
       .prefixes = {"vision_model.", ""},
       .patch_embed = "embeddings.patch_embedding",
       .pos_embed = "embeddings.position_embedding.weight",
       .block = "encoder.layers.{i}.",
       .block_naming = kHfClipBlock,
       .final_norm = "post_layernorm",
       .gelu = Gelu::tanh,
       .norm = kHalf,
       .pos_interp = PosInterp::bicubic,  // SiglipVisionEmbeddings.interpolate_pos_encoding
       .model_types = {"siglip", "siglip_vision_model"},
       .flat_tokens = true,  // positions [N, D]
       .probe_head = "head"},
      {.name = "tintn",
       .description = "tintn vision-transformer-from-scratch (the CIFAR-10 test model)",
       .prefixes = {""},
       .patch_embed = "embedding.patch_embeddings.projection",
       .cls_token = "embedding.cls_token",
       .pos_embed = "embedding.position_embeddings",
       .block = "encoder.blocks.{i}.",
       .block_naming = {.norm1 = "layernorm_1",
                        .qkv = {"attention.qkv_projection"},
                        .proj = "attention.output_projection",
                        .norm2 = "layernorm_2",
                        .fc1 = "mlp.dense_1",
                        .fc2 = "mlp.dense_2"},
       .head = "classifier",
       .eps = 1e-5f,
       .gelu = Gelu::tanh,
       .norm = kHalf},
      // CLIP's image towers: OpenAI CLIP and OpenCLIP (visual.*), and Hugging Face CLIP (vision_model.*).
      // Both: a class embedding [D] and positions [1 + N, D], no patch bias, ln_pre before the first
      // block, ln_post on the tokens (the class token's row is what CLIP pools), a projection to the
      // joint embedding. The text tower's tensors are outside these names: text_tower_loader.cpp reads them.
      {.name = "clip",
       .description = "OpenAI CLIP / OpenCLIP ViT image tower (visual.*; and its text tower, beside it)",
       .prefixes = {"visual.", ""},
       .patch_embed = "conv1",
       .cls_token = "class_embedding",
       .pos_embed = "positional_embedding",
       .block = "transformer.resblocks.{i}.",
       .block_naming = {.norm1 = "ln_1",
                        .qkv = {"attn.in_proj_"},
                        .proj = "attn.out_proj",
                        .ls1 = "ls_1.gamma",
                        .norm2 = "ln_2",
                        .fc1 = "mlp.c_fc",
                        .fc2 = "mlp.c_proj",
                        .ls2 = "ls_2.gamma"},
       .final_norm = "ln_post",
       .eps = 1e-5f,
       .gelu = Gelu::quick,
       .norm = kClip,
       .pos_interp = PosInterp::antialias,  // open_clip's resize_pos_embed (bicubic, antialias=True)
       .class_position = true,
       .detect_also = {"class_embedding"},  // a whole CLIP state dict's text tower is transformer.resblocks too
       .flat_tokens = true,
       .norm_pre = "ln_pre",
       .embed = "proj",
       .embed_transposed = true,  // x @ proj
       .note = "GELU by default QuickGELU, as OpenAI's CLIP and OpenCLIP's quickgelu variants; OpenCLIP's other models "
               "(e.g. the LAION-trained ones) use exact GELU: ask for the erf form (docs/families.md)"},
      {.name = "hf-clip",
       .description = "Hugging Face transformers CLIP image tower (CLIPVisionModel[WithProjection], CLIPModel)",
       .prefixes = {"vision_model.", ""},
       .patch_embed = "embeddings.patch_embedding",
       .cls_token = "embeddings.class_embedding",
       .pos_embed = "embeddings.position_embedding.weight",
       .block = "encoder.layers.{i}.",
       .block_naming = kHfClipBlock,
       .final_norm = "post_layernorm",
       .eps = 1e-5f,
       .gelu = Gelu::quick,
       .norm = kClip,
       .pos_interp = PosInterp::bicubic,  // CLIPVisionEmbeddings.interpolate_pos_encoding
       .class_position = true,
       .model_types = {"clip", "clip_vision_model"},
       .detect_also = {"embeddings.class_embedding"},  // SigLIP's blocks have the same names
       .flat_tokens = true,
       .norm_pre = "pre_layrnorm",  // sic
       .embed = "visual_projection.weight",
       .ignored = {"embeddings.position_ids"},  // a buffer older files saved
       .note = "QuickGELU unless config.json's hidden_act says otherwise"},
  };
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

}  // namespace vitattn::model
