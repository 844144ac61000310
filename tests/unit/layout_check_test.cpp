// The layout check on names alone (layout_check.hpp): a complete timm state dict passes, each
// kind of damage is refused naming the tensors, tensors outside the encoder are returned.
#include "model/layout_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "tensors/safetensors.hpp"
#include "test_util.hpp"

namespace vitattn::model {
namespace {

using test::error_of;

// Names only matter here: every tensor is one float.
struct Names {
  std::vector<std::string> list;
  Names& add(const std::string& n) {
    list.push_back(n);
    return *this;
  }
  Names& linear(const std::string& stem) { return add(stem + ".weight").add(stem + ".bias"); }
  Names& drop(const std::string& n) {
    list.erase(std::remove(list.begin(), list.end(), n), list.end());
    return *this;
  }
  tensors::TensorFile parse() const {
    std::vector<tensors::NamedTensor> t;
    for (const auto& n : list) t.push_back({n, {1}, {0.5f}});
    return tensors::TensorFile::parse(tensors::encode_safetensors(t, {}), "m.safetensors");
  }
};

Names timm(int blocks, bool qkv_bias = true) {
  Names n;
  n.linear("patch_embed.proj").add("cls_token").add("pos_embed").linear("norm").linear("head");
  for (int i = 0; i < blocks; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    n.linear(b + "norm1").add(b + "attn.qkv.weight").linear(b + "attn.proj").linear(b + "norm2");
    n.linear(b + "mlp.fc1").linear(b + "mlp.fc2");
    if (qkv_bias) n.add(b + "attn.qkv.bias");
  }
  return n;
}

Layout check(const Names& n, const char* family = "timm") {
  return check_layout(n.parse(), *family_by_name(family), "");
}

TEST(LayoutCheck, ACompleteModelPassesWithItsBlocksCounted) {
  EXPECT_EQ(check(timm(3)).n_blocks, 3);
  EXPECT_TRUE(check(timm(3)).outside.empty());
  EXPECT_EQ(check(timm(3, false)).n_blocks, 3);  // no qkv bias at all: timm's qkv_bias=False
}

TEST(LayoutCheck, AGapInTheBlocksNamesTheMissingBlock) {
  Names n = timm(4);
  n.list.erase(std::remove_if(n.list.begin(), n.list.end(), [](const std::string& s) { return s.starts_with("blocks.2."); }),
               n.list.end());
  EXPECT_EQ(error_of([&] { check(n); }),
            "m.safetensors: a timm model's blocks are numbered without a gap, and this file has no blocks.2.* "
            "(its blocks go up to blocks.3.*)");
}

TEST(LayoutCheck, MissingTensorsAreNamed) {
  EXPECT_EQ(error_of([&] { check(timm(2).drop("norm.weight")); }),
            "m.safetensors: not a complete timm model: missing norm.weight");
  EXPECT_EQ(error_of([&] { check(timm(2).drop("blocks.1.mlp.fc1.bias").drop("head.bias")); }),
            "m.safetensors: not a complete timm model: missing blocks.1.mlp.fc1.bias, head.bias");
  EXPECT_EQ(error_of([&] { check(timm(3).drop("blocks.1.attn.qkv.bias")); }),  // in every block or in none
            "m.safetensors: not a complete timm model: missing blocks.1.attn.qkv.bias");
  EXPECT_EQ(error_of([&] { check(timm(2).drop("head.weight")); }),  // a bias without its weight
            "m.safetensors: not a complete timm model: missing head.weight");
}

TEST(LayoutCheck, EncoderNamesLeftUnusedAreNamedOthersReturned) {
  Names n = timm(2);
  n.add("blocks.0.attn.q_norm.weight").add("patch_embed.norm.weight").add("head.mlp.0.weight").add("optimizer.lr");
  EXPECT_EQ(error_of([&] { check(n); }),
            "m.safetensors: not a complete timm model: not of the timm layout (misnamed, or from another model?): "
            "blocks.0.attn.q_norm.weight, patch_embed.norm.weight");
  const Layout ok = check(timm(2).add("head.mlp.0.weight").add("optimizer.lr").add("mask_token"));
  EXPECT_EQ(ok.outside, (std::vector<std::string>{"head.mlp.0.weight", "mask_token", "optimizer.lr"}));
}

// timm's norm_pre (pre_norm=True) is read: whole or absent. DINO's and DINOv2's code has none, so
// read as either it is another family's tensor, an error, not a norm left out of the forward.
TEST(LayoutCheck, TimmsNormPreIsWholeOrAbsent) {
  EXPECT_TRUE(check(timm(2).linear("norm_pre")).outside.empty());
  EXPECT_EQ(error_of([&] { check(timm(2).add("norm_pre.weight")); }),
            "m.safetensors: not a complete timm model: missing norm_pre.bias");
  EXPECT_EQ(error_of([&] { check(timm(2).add("norm_pre.bias")); }),
            "m.safetensors: not a complete timm model: missing norm_pre.weight");
  for (const char* family : {"dino", "dinov2"})
    EXPECT_EQ(error_of([&] { check(timm(2).linear("norm_pre"), family); }),
              std::string("m.safetensors: not a ") + family + " model: it holds norm_pre.bias, norm_pre.weight, which "
                  "other families read and a " + family + " model does not (a file of another family?)");
}

TEST(LayoutCheck, SeparateQueryKeyValueBiasesComeTogether) {
  Names n;
  n.linear("embeddings.patch_embeddings.projection").add("embeddings.cls_token").add("embeddings.position_embeddings");
  n.linear("layernorm");
  const std::string b = "encoder.layer.0.";
  n.linear(b + "norm1").linear(b + "attention.attention.query").linear(b + "attention.attention.key");
  n.add(b + "attention.attention.value.weight");
  n.linear(b + "attention.output.dense").linear(b + "norm2").linear(b + "mlp.fc1").linear(b + "mlp.fc2");
  EXPECT_EQ(error_of([&] { check(n, "hf-dinov2"); }),
            "m.safetensors: not a complete hf-dinov2 model: missing encoder.layer.0.attention.attention.value.bias");
}

TEST(LayoutCheck, TheSingleHeadLayoutHasOptionalBiases) {
  Names n;
  n.add("patch_embed.proj.weight").add("cls_token").add("pos_embed").add("attn.q.weight").add("attn.k.weight");
  n.add("attn.v.weight");
  EXPECT_EQ(check(n, kNativeFamily).n_blocks, 1);
  EXPECT_EQ(error_of([&] { check(Names(n).add("attn.o.weight"), kNativeFamily); }),
            "m.safetensors: not a complete single-head model: not of the single-head layout (misnamed, or from another "
            "model?): attn.o.weight");
}

}  // namespace
}  // namespace vitattn::model
