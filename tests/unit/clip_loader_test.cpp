// CLIP's image towers as the loader reads them (checkpoint_families.cpp "clip", "hf-clip"): the
// [D] class embedding, the [1 + N, D] positions, ln_pre, the projection (OpenAI's [D, E] applied
// as x·proj is kept transposed), a whole state dict's text tower left outside, and the misfits
// refused by name. Values are checked element by element against the file's.
#include <gtest/gtest.h>

#include <random>

#include "core/error.hpp"
#include "model/vit_loader.hpp"
#include "tensors/safetensors.hpp"
#include "checkpoint_builder.hpp"
#include "test_util.hpp"

namespace vitattn::model {
namespace {

constexpr std::uint64_t D = 8, P = 2, G = 2, MLP = 12, L = 2, E = 5;

struct Tensors : test::CheckpointBuilder {
  Tensors() : CheckpointBuilder(11) {}
  void linear(const std::string& name, std::uint64_t out, std::uint64_t in) {
    add(name + "weight", {out, in});
    add(name + "bias", {out});
  }
  void norm(const std::string& name, std::uint64_t width = D) {
    add(name + ".weight", {width});
    add(name + ".bias", {width});
  }
  const tensors::NamedTensor& find(const std::string& name) const {
    for (const auto& n : list)
      if (n.name == name) return n;
    throw std::runtime_error("test: no " + name);
  }
  void drop(const std::string& name) {
    std::erase_if(list, [&](const tensors::NamedTensor& n) { return n.name == name; });
  }
  tensors::TensorFile parse() const { return CheckpointBuilder::parse({{"num_heads", "2"}}); }
};

// OpenAI CLIP's names under `prefix`; with `text`, a text tower at the top as a whole CLIP state dict has.
Tensors openai(const std::string& prefix, bool text) {
  Tensors t;
  t.add(prefix + "class_embedding", {D});
  t.add(prefix + "positional_embedding", {1 + G * G, D});
  t.add(prefix + "proj", {D, E});
  t.add(prefix + "conv1.weight", {D, 3, P, P});
  t.norm(prefix + "ln_pre");
  for (std::uint64_t i = 0; i < L; ++i) {
    const std::string b = prefix + "transformer.resblocks." + std::to_string(i) + ".";
    t.norm(b + "ln_1");
    t.linear(b + "attn.in_proj_", 3 * D, D);
    t.linear(b + "attn.out_proj.", D, D);
    t.norm(b + "ln_2");
    t.linear(b + "mlp.c_fc.", MLP, D);
    t.linear(b + "mlp.c_proj.", D, MLP);
  }
  t.norm(prefix + "ln_post");
  if (!text) return t;
  constexpr std::uint64_t W = 6;  // the text tower's own width
  t.add("token_embedding.weight", {10, W});
  t.add("positional_embedding", {4, W});
  t.norm("transformer.resblocks.0.ln_1", W);
  t.linear("transformer.resblocks.0.attn.in_proj_", 3 * W, W);
  t.norm("ln_final", W);
  t.add("text_projection", {W, E});
  t.add("logit_scale", {});
  return t;
}

using test::error_of;

TEST(ClipLoader, AWholeStateDictIsTheImageTowerWithItsTextTowerOutside) {
  const Tensors t = openai("visual.", true);
  const LoadedVit v = load_vit(t.parse());
  EXPECT_EQ(v.family, "clip");
  EXPECT_EQ(v.prefix, "visual.");
  EXPECT_EQ(v.model.gelu, Gelu::quick);
  EXPECT_FLOAT_EQ(v.model.eps, 1e-5f);
  EXPECT_FLOAT_EQ(v.model.norm.mean[0], 0.48145466f);
  EXPECT_FLOAT_EQ(v.model.norm.std[2], 0.27577711f);
  EXPECT_EQ(v.model.pos_prefix, 1);
  EXPECT_EQ(v.model.grid_h, 2);
  const auto& cls = t.find("visual.class_embedding").values;
  EXPECT_EQ(std::vector<float>(v.model.cls_token.data(), v.model.cls_token.data() + D), cls);
  const auto& pos = t.find("visual.positional_embedding").values;
  EXPECT_EQ(std::vector<float>(v.model.pos_embed.data(), v.model.pos_embed.data() + (1 + G * G) * D), pos);
  EXPECT_TRUE(v.model.norm_pre.present());
  EXPECT_EQ(v.model.b_patch.size(), 0);
  // proj [D, E] row-major: proj[i, j] = values[i·E + j]; w_embed (E, D) holds its transpose.
  const auto& proj = t.find("visual.proj").values;
  ASSERT_EQ(v.model.w_embed.rows(), static_cast<Eigen::Index>(E));
  ASSERT_EQ(v.model.w_embed.cols(), static_cast<Eigen::Index>(D));
  for (std::uint64_t i = 0; i < D; ++i)
    for (std::uint64_t j = 0; j < E; ++j)
      EXPECT_EQ(v.model.w_embed(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)), proj[i * E + j]);
  for (const char* name : {"token_embedding.weight", "positional_embedding", "ln_final.weight", "logit_scale",
                           "transformer.resblocks.0.ln_1.weight", "text_projection"})
    EXPECT_NE(std::find(v.outside.begin(), v.outside.end(), name), v.outside.end()) << name;
}

TEST(ClipLoader, TheImageTowerExportedWithoutThePrefix) {
  const LoadedVit v = load_vit(openai("", false).parse());
  EXPECT_EQ(v.family, "clip");
  EXPECT_EQ(v.prefix, "");
  EXPECT_EQ(v.model.w_embed.rows(), static_cast<Eigen::Index>(E));
}

TEST(ClipLoader, ATextTowerAloneIsNoImageTower) {
  Tensors t;  // a text tower's blocks at the top, no class embedding: not mistaken for "clip"
  t.norm("transformer.resblocks.0.ln_1");
  t.linear("transformer.resblocks.0.attn.in_proj_", 3 * D, D);
  t.add("token_embedding.weight", {10, D});
  EXPECT_NE(error_of([&] { load_vit(t.parse()); }).find("not a model vitattn knows"), std::string::npos);
}

TEST(ClipLoader, HuggingFaceProjectionOutsideThePrefixAndThePositionIdsBuffer) {
  Tensors t;
  const std::string v = "vision_model.";
  t.add(v + "embeddings.class_embedding", {D});
  t.add(v + "embeddings.patch_embedding.weight", {D, 3, P, P});
  t.add(v + "embeddings.position_embedding.weight", {1 + G * G, D});
  t.add(v + "embeddings.position_ids", {1, 1 + G * G});  // a buffer: read by nobody
  t.norm(v + "pre_layrnorm");
  for (std::uint64_t i = 0; i < L; ++i) {
    const std::string b = v + "encoder.layers." + std::to_string(i) + ".";
    t.norm(b + "layer_norm1");
    for (const char* q : {"self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj.", "self_attn.out_proj."})
      t.linear(b + q, D, D);
    t.norm(b + "layer_norm2");
    t.linear(b + "mlp.fc1.", MLP, D);
    t.linear(b + "mlp.fc2.", D, MLP);
  }
  t.norm(v + "post_layernorm");
  t.add("visual_projection.weight", {E, D});
  const LoadedVit m = load_vit(t.parse());
  EXPECT_EQ(m.family, "hf-clip");
  EXPECT_EQ(m.prefix, v);
  const auto& w = t.find("visual_projection.weight").values;
  EXPECT_EQ(std::vector<float>(m.model.w_embed.data(), m.model.w_embed.data() + E * D), w);  // (E, D) as stored
  const auto& pre = t.find(v + "pre_layrnorm.bias").values;
  EXPECT_EQ(std::vector<float>(m.model.norm_pre.bias.data(), m.model.norm_pre.bias.data() + D), pre);
  t.drop("visual_projection.weight");  // CLIPVisionModel: no projection, no embedding
  EXPECT_EQ(load_vit(t.parse()).model.w_embed.size(), 0);
}

TEST(ClipLoader, MisfitsAreRefusedByName) {
  Tensors t = openai("visual.", false);
  t.drop("visual.ln_pre.bias");
  EXPECT_NE(error_of([&] { load_vit(t.parse()); }).find("visual.ln_pre.bias"), std::string::npos);
  Tensors p = openai("visual.", false);
  p.drop("visual.positional_embedding");
  p.add("visual.positional_embedding", {1, 1 + G * G, D});  // timm's 3-D shape under CLIP's name
  EXPECT_NE(error_of([&] { load_vit(p.parse()); }).find("expected [1+N, 8]"), std::string::npos);
  Tensors e = openai("visual.", false);
  e.drop("visual.proj");
  e.add("visual.proj", {E, D});  // HF's orientation under OpenAI's name
  EXPECT_NE(error_of([&] { load_vit(e.parse()); }).find("visual.proj is [5, 8], expected [8, E]"), std::string::npos);
}

}  // namespace
}  // namespace vitattn::model
