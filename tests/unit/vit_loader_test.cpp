// Each checkpoint naming, spelled out here by hand, is recognised and loaded into the same
// model; misfits are refused with the file and tensor named.
#include "model/vit_loader.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "tensors/npy.hpp"
#include "tensors/safetensors.hpp"
#include "checkpoint_builder.hpp"
#include "test_util.hpp"

namespace vitattn::model {
namespace {

constexpr std::uint64_t D = 8, P = 2, G = 2, MLP = 12, L = 2;

// name → (shape, values); values drawn in a fixed order so every naming gets the same numbers
struct Tensors : test::CheckpointBuilder {
  Tensors() : CheckpointBuilder(7) {}
};

// The same roles in the same order under each naming.
void linear(Tensors& t, const std::string& name, std::uint64_t out, std::uint64_t in, const char* sep = ".") {
  t.add(name + sep + "weight", {out, in});
  t.add(name + sep + "bias", {out});
}
void norm(Tensors& t, const std::string& name) {
  t.add(name + ".weight", {D});
  t.add(name + ".bias", {D});
}

Tensors timm(bool layer_scale, int registers) {
  Tensors t;
  t.add("patch_embed.proj.weight", {D, 3, P, P});
  t.add("patch_embed.proj.bias", {D});
  t.add("cls_token", {1, 1, D});
  if (registers) t.add("register_tokens", {1, static_cast<std::uint64_t>(registers), D});
  t.add("pos_embed", {1, 1 + G * G, D});
  for (std::uint64_t i = 0; i < L; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    norm(t, b + "norm1");
    linear(t, b + "attn.qkv", 3 * D, D);
    linear(t, b + "attn.proj", D, D);
    if (layer_scale) t.add(b + "ls1.gamma", {D});
    norm(t, b + "norm2");
    linear(t, b + "mlp.fc1", MLP, D);
    linear(t, b + "mlp.fc2", D, MLP);
    if (layer_scale) t.add(b + "ls2.gamma", {D});
  }
  norm(t, "norm");
  return t;
}

Tensors torchvision() {
  Tensors t;
  t.add("class_token", {1, 1, D});
  t.add("conv_proj.weight", {D, 3, P, P});
  t.add("conv_proj.bias", {D});
  t.add("encoder.pos_embedding", {1, 1 + G * G, D});
  for (std::uint64_t i = 0; i < L; ++i) {
    const std::string b = "encoder.layers.encoder_layer_" + std::to_string(i) + ".";
    norm(t, b + "ln_1");
    linear(t, b + "self_attention.in_proj", 3 * D, D, "_");
    linear(t, b + "self_attention.out_proj", D, D);
    norm(t, b + "ln_2");
    linear(t, b + "mlp.0", MLP, D);
    linear(t, b + "mlp.3", D, MLP);
  }
  norm(t, "encoder.ln");
  linear(t, "heads.head", 5, D);
  return t;
}

Tensors hf_vit(const std::string& prefix) {
  Tensors t;
  t.add(prefix + "embeddings.cls_token", {1, 1, D});
  t.add(prefix + "embeddings.position_embeddings", {1, 1 + G * G, D});
  t.add(prefix + "embeddings.patch_embeddings.projection.weight", {D, 3, P, P});
  t.add(prefix + "embeddings.patch_embeddings.projection.bias", {D});
  for (std::uint64_t i = 0; i < L; ++i) {
    const std::string b = prefix + "encoder.layer." + std::to_string(i) + ".";
    linear(t, b + "attention.attention.query", D, D);
    linear(t, b + "attention.attention.key", D, D);
    linear(t, b + "attention.attention.value", D, D);
    linear(t, b + "attention.output.dense", D, D);
    linear(t, b + "intermediate.dense", MLP, D);
    linear(t, b + "output.dense", D, MLP);
    norm(t, b + "layernorm_before");
    norm(t, b + "layernorm_after");
  }
  norm(t, prefix + "layernorm");
  linear(t, "classifier", 3, D);
  return t;
}

const tensors::NamedTensor& find(const Tensors& t, const std::string& name) {
  for (const auto& n : t.list)
    if (n.name == name) return n;
  throw std::runtime_error("test: no " + name);
}

using test::error_of;

TEST(VitLoader, TimmWithAClassifierIsTimmWithHalfNormalisation) {
  Tensors t = timm(false, 0);
  linear(t, "head", 4, D);
  const LoadedVit v = load_vit(t.parse({{"num_heads", "2"}}));
  EXPECT_EQ(v.family, "timm");
  EXPECT_EQ(v.model.n_layers(), 2);
  EXPECT_EQ(v.model.n_heads, 2);
  EXPECT_FLOAT_EQ(v.model.norm.mean[0], 0.5f);  // timm "augreg"
  EXPECT_EQ(v.model.w_head.rows(), 4);
  EXPECT_FALSE(v.model.gelu == Gelu::tanh);
}

TEST(VitLoader, HeadCountComesFromTheOptionThenMetadataThenWidth) {
  Tensors t = timm(false, 0);
  EXPECT_EQ(error_of([&] { load_vit(t.parse()); }),
            "m.safetensors: d_model 8 is not a multiple of 64 and the file does not say how many heads");
  EXPECT_EQ(load_vit(t.parse({{"num_heads", "2"}})).model.n_heads, 2);
  EXPECT_EQ(load_vit(t.parse({{"num_heads", "2"}})).heads_from, "__metadata__");
  VitOverrides o;
  o.heads = 4;
  EXPECT_EQ(load_vit(t.parse(), o).model.n_heads, 4);
  // The request wins over the file (open_model warns, naming both).
  EXPECT_EQ(load_vit(t.parse({{"num_heads", "2"}}), o).model.n_heads, 4);
  EXPECT_EQ(load_vit(t.parse({{"num_heads", "2"}}), o).heads_from, "asked for");
  o.heads = 3;
  EXPECT_EQ(error_of([&] { load_vit(t.parse(), o); }), "m.safetensors: 3 heads do not divide d_model 8");
}

TEST(VitLoader, TimmNamesWithoutAClassifierAreDinoAndWithLayerScaleDinov2) {
  const std::map<std::string, std::string> meta{{"num_heads", "2"}};
  const LoadedVit dino = load_vit(timm(false, 0).parse(meta));
  EXPECT_EQ(dino.family, "dino");
  EXPECT_FLOAT_EQ(dino.model.norm.mean[0], 0.485f);
  EXPECT_FLOAT_EQ(dino.model.eps, 1e-6f);

  const Tensors t = timm(true, 4);
  const LoadedVit v2 = load_vit(t.parse(meta));
  EXPECT_EQ(v2.family, "dinov2");
  EXPECT_EQ(v2.model.n_registers(), 4);
  EXPECT_EQ(v2.model.first_patch_token(), 5);
  const auto& gamma = find(t, "blocks.1.ls2.gamma").values;
  EXPECT_EQ(std::vector<float>(v2.model.blocks[1].ls2.data(), v2.model.blocks[1].ls2.data() + D), gamma);
}

TEST(VitLoader, TorchvisionPackedInProjectionAndClassifier) {
  const Tensors t = torchvision();
  const LoadedVit v = load_vit(t.parse({{"num_heads", "2"}}));
  EXPECT_EQ(v.family, "torchvision");
  const auto& w = find(t, "encoder.layers.encoder_layer_1.self_attention.in_proj_weight").values;
  EXPECT_EQ(std::vector<float>(v.model.blocks[1].w_qkv.data(), v.model.blocks[1].w_qkv.data() + 3 * D * D), w);
  EXPECT_EQ(v.model.w_head.rows(), 5);
  EXPECT_TRUE(v.model.final_norm.present());
  EXPECT_EQ(v.model.grid_h, 2);
  EXPECT_EQ(v.model.pos_prefix, 1);
}

TEST(VitLoader, HuggingFaceSeparateQueryKeyValueAreStackedInOrder) {
  for (const std::string prefix : {"vit.", ""}) {
    const Tensors t = hf_vit(prefix);
    const LoadedVit v = load_vit(t.parse({{"num_heads", "2"}}));
    EXPECT_EQ(v.family, "hf-vit");
    EXPECT_EQ(v.prefix, prefix);
    EXPECT_FLOAT_EQ(v.model.eps, 1e-12f);
    EXPECT_FLOAT_EQ(v.model.norm.std[2], 0.5f);
    const Matrix& w = v.model.blocks[0].w_qkv;
    const auto& k = find(t, prefix + "encoder.layer.0.attention.attention.key.weight").values;
    const auto& vb = find(t, prefix + "encoder.layer.0.attention.attention.value.bias").values;
    EXPECT_EQ(std::vector<float>(w.data() + D * D, w.data() + 2 * D * D), k);  // rows D … 2D−1
    EXPECT_EQ(std::vector<float>(v.model.blocks[0].b_qkv.data() + 2 * D, v.model.blocks[0].b_qkv.data() + 3 * D), vb);
    EXPECT_EQ(v.model.w_head.rows(), 3);  // "classifier" sits outside the "vit." prefix
  }
}

TEST(VitLoader, OverridesAndMetadataDefaults) {
  VitOverrides o;
  o.eps = 1e-5f;
  o.gelu = Gelu::tanh;
  const LoadedVit v = load_vit(hf_vit("").parse({{"num_heads", "2"}, {"mean", "0.1"}, {"std", "0.2,0.3,0.4"}}), o);
  EXPECT_FLOAT_EQ(v.model.eps, 1e-5f);
  EXPECT_EQ(v.model.gelu, Gelu::tanh);
  EXPECT_FLOAT_EQ(v.model.norm.mean[1], 0.1f);
  EXPECT_FLOAT_EQ(v.model.norm.std[2], 0.4f);
  o.family = "torchvision";
  EXPECT_EQ(error_of([&] { load_vit(hf_vit("").parse({{"num_heads", "2"}}), o); }),
            "m.safetensors: does not use the torchvision naming (no conv_proj.weight with a first block "
            "encoder.layers.encoder_layer_0.ln_1.weight)");
}

// A family asked for by name reads the file by that family's layout, which must then read what
// the file holds: tensors other families read (positions, a classifier, registers, a
// distillation token) left over are one error naming the file, the family and the tensors.
// Before, a timm ViT read as DINOv3 ran without its positions and had no classifier.
TEST(VitLoader, AFamilyAskedForMustReadWhatOtherFamiliesWould) {
  const std::map<std::string, std::string> meta{{"num_heads", "2"}};
  const auto asked = [](const std::string& family) {
    VitOverrides o;
    o.family = family;
    return o;
  };
  Tensors vit = timm(false, 0);
  linear(vit, "head", 4, D);
  EXPECT_EQ(load_vit(vit.parse(meta), asked("timm")).family, "timm");  // its own family, and dino's names alike
  EXPECT_EQ(load_vit(vit.parse(meta), asked("dino")).model.w_head.rows(), 4);
  EXPECT_EQ(error_of([&] { load_vit(vit.parse(meta), asked("dinov3")); }),
            "m.safetensors: not a dinov3 model: it holds head.bias, head.weight, pos_embed, which other families read "
            "and a dinov3 model does not (a file of another family?)");
  const Tensors dinov2 = timm(true, 4);
  EXPECT_EQ(load_vit(dinov2.parse(meta)).family, "dinov2");
  EXPECT_EQ(error_of([&] { load_vit(dinov2.parse(meta), asked("dinov3")); }),
            "m.safetensors: not a dinov3 model: it holds pos_embed, register_tokens, which other families read and a "
            "dinov3 model does not (a file of another family?)");
  // A distilled DeiT read as timm would lose its distillation token and second head.
  Tensors deit = timm(false, 0);
  for (auto& n : deit.list)
    if (n.name == "pos_embed") n.shape = {1, 2 + G * G, D}, n.values.resize((2 + G * G) * D);
  deit.add("dist_token", {1, 1, D});
  linear(deit, "head", 4, D);
  linear(deit, "head_dist", 4, D);
  EXPECT_EQ(load_vit(deit.parse(meta)).family, "deit-distilled");
  EXPECT_EQ(error_of([&] { load_vit(deit.parse(meta), asked("timm")); }),
            "m.safetensors: not a timm model: it holds dist_token, head_dist.bias, head_dist.weight, which other "
            "families read and a timm model does not (a file of another family?)");
  // With a tensor missing too, both are said.
  std::erase_if(vit.list, [](const tensors::NamedTensor& n) { return n.name == "norm.bias"; });
  EXPECT_EQ(error_of([&] { load_vit(vit.parse(meta), asked("dinov3")); }),
            "m.safetensors: not a complete dinov3 model: missing norm.bias; it holds head.bias, head.weight, pos_embed, "
            "which other families read and a dinov3 model does not (a file of another family?)");
}

// timm's pre_norm=True models (its CLIP towers) hold norm_pre, applied to the tokens before the
// first block: read into the model's pre-block norm, in timm and distilled DeiT, with a head or
// without (a backbone with it is timm's, not DINO's), and said by -v. Before, it was listed as
// outside the encoder and the forward ran without it.
TEST(VitLoader, TimmsNormPreIsTheNormBeforeTheBlocks) {
  const std::map<std::string, std::string> meta{{"num_heads", "2"}};
  const auto bias = [](const LayerNorm& n) { return std::vector<float>(n.bias.data(), n.bias.data() + n.bias.size()); };
  Tensors backbone = timm(false, 0);
  norm(backbone, "norm_pre");
  const LoadedVit v = load_vit(backbone.parse(meta));
  EXPECT_EQ(v.family, "timm");
  EXPECT_TRUE(v.outside.empty());
  ASSERT_TRUE(v.model.norm_pre.present());
  EXPECT_EQ(bias(v.model.norm_pre), find(backbone, "norm_pre.bias").values);
  const auto& w = find(backbone, "norm_pre.weight").values;
  EXPECT_EQ(std::vector<float>(v.model.norm_pre.weight.data(), v.model.norm_pre.weight.data() + D), w);
  EXPECT_NE(v.summary().find("norm before the blocks, final norm"), std::string::npos) << v.summary();
  Tensors classifier = backbone;
  linear(classifier, "head", 4, D);
  EXPECT_EQ(bias(load_vit(classifier.parse(meta)).model.norm_pre), find(backbone, "norm_pre.bias").values);
  Tensors deit = timm(false, 0);
  for (auto& n : deit.list)
    if (n.name == "pos_embed") n.shape = {1, 2 + G * G, D}, n.values.resize((2 + G * G) * D);
  deit.add("dist_token", {1, 1, D});
  norm(deit, "norm_pre");
  linear(deit, "head", 4, D);
  linear(deit, "head_dist", 4, D);
  const LoadedVit distilled = load_vit(deit.parse(meta));
  EXPECT_EQ(distilled.family, "deit-distilled");
  EXPECT_EQ(bias(distilled.model.norm_pre), find(deit, "norm_pre.bias").values);
  // Without it (most timm models) there is none, and -v says nothing of it.
  const LoadedVit plain = load_vit(timm(false, 0).parse(meta));
  EXPECT_FALSE(plain.model.norm_pre.present());
  EXPECT_EQ(plain.summary().find("norm before"), std::string::npos) << plain.summary();
}

// -v's summary says what the position table's leading rows are for: the distillation token's
// (distilled DeiT), the registers' (some timm models), or both.
TEST(VitLoader, TheSummaryNamesWhatTheExtraPositionsAreFor) {
  const std::map<std::string, std::string> meta{{"num_heads", "2"}};
  const auto with_positions = [](Tensors t, std::uint64_t leading) {
    for (auto& n : t.list)
      if (n.name == "pos_embed") n.shape = {1, leading + G * G, D}, n.values.resize((leading + G * G) * D);
    return t;
  };
  Tensors deit = with_positions(timm(false, 0), 2);
  deit.add("dist_token", {1, 1, D});
  linear(deit, "head", 4, D);
  linear(deit, "head_dist", 4, D);
  const std::string distilled = load_vit(deit.parse(meta)).summary();
  EXPECT_NE(distilled.find("grid 2x2 (positions for the distillation token), 0 registers"), std::string::npos)
      << distilled;
  const std::string registers = load_vit(with_positions(timm(true, 2), 3).parse(meta)).summary();
  EXPECT_NE(registers.find("grid 2x2 (positions for the registers), 2 registers"), std::string::npos) << registers;
  const std::string plain = load_vit(timm(true, 4).parse(meta)).summary();
  EXPECT_NE(plain.find("grid 2x2, 4 registers"), std::string::npos) << plain;
}

TEST(VitLoader, MisfitsNameTheFileAndTheTensor) {
  const std::map<std::string, std::string> meta{{"num_heads", "2"}};
  Tensors t = timm(false, 0);
  for (auto& n : t.list)
    if (n.name == "blocks.1.mlp.fc2.weight") n.shape = {D, MLP - 1}, n.values.resize(D * (MLP - 1));
  EXPECT_EQ(error_of([&] { load_vit(t.parse(meta)); }), "m.safetensors: blocks.1.mlp.fc2.weight is [8, 11], expected [8, 12]");

  t = timm(false, 0);
  for (auto& n : t.list)
    if (n.name == "pos_embed") n.shape = {1, 4 + 2, D}, n.values.resize(6 * D);
  EXPECT_EQ(error_of([&] { load_vit(t.parse(meta)); }),
            "m.safetensors: pos_embed has 6 positions, which is neither N nor 1 + N for a square grid of N patches");

  t = timm(false, 0);
  std::erase_if(t.list, [](const tensors::NamedTensor& n) { return n.name == "blocks.0.attn.proj.weight"; });
  EXPECT_EQ(error_of([&] { load_vit(t.parse(meta)); }), "m.safetensors: not a complete dino model: missing blocks.0.attn.proj.weight");

  t = timm(false, 0);
  find(t, "cls_token");
  for (auto& n : t.list)
    if (n.name == "blocks.0.norm2.bias") n.values[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(error_of([&] { load_vit(t.parse(meta)); }), "m.safetensors: blocks.0.norm2.bias holds a non-finite value (nan at index 3)");

  Tensors other;
  other.add("encoder.weight", {2, 2});
  EXPECT_NE(error_of([&] { load_vit(other.parse()); }).find("m.safetensors: not a model vitattn knows (looked for the tensor names of: single-head, timm,"), std::string::npos);
}

// The model's own validate() leaves the values to the loader (one pass over the weights, not
// two), so the loader must check every tensor it reads: a NaN or an infinity in any of them,
// in every naming (packed and separate q, k, v; registers; layer scale; classifier), is
// refused with that tensor named. The last value is the one spoiled: a check that stopped
// short of a tensor's end, or skipped a tensor, would let it through.
TEST(VitLoader, ANonFiniteValueInAnyTensorIsRefusedByName) {
  Tensors with_head = timm(true, 2);
  linear(with_head, "head", 5, D);
  for (const Tensors& model : {with_head, torchvision(), hf_vit("vit.")}) {
    ASSERT_NO_THROW(load_vit(model.parse({{"num_heads", "2"}})));  // unspoiled, it loads
    for (std::size_t i = 0; i < model.list.size(); ++i) {
      for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        Tensors t = model;
        tensors::NamedTensor& n = t.list[i];
        n.values.back() = bad;
        const std::string error = error_of([&] { load_vit(t.parse({{"num_heads", "2"}})); });
        EXPECT_NE(error.find("m.safetensors: " + n.name + " holds a non-finite value"), std::string::npos)
            << n.name << " with " << bad << ": " << (error.empty() ? "loaded" : error);
      }
    }
  }
}

TEST(Npy, ReadsBackWhatItWritesAndFloat64) {
  test::TempDir dir;
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  tensors::write_npy(dir / "a.npy", v.data(), {1, 2, 3});
  const tensors::NpyArray a = tensors::read_npy(dir / "a.npy");
  EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(a.values, v);

  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  // The preamble and header as one string first: a vector from a braced list and then
  // grown makes GCC 12 at -O3 warn of a write out of bounds (-Warray-bounds) that is not there.
  const std::string preamble("\x93NUMPY\x01\x00", 8);
  const std::string head = preamble + static_cast<char>(header.size()) + '\0' + header;
  std::vector<std::uint8_t> bytes(head.begin(), head.end());
  const double d[2] = {0.5, -2.25};
  const auto* p = reinterpret_cast<const std::uint8_t*>(d);
  bytes.insert(bytes.end(), p, p + 16);
  EXPECT_EQ(tensors::parse_npy(bytes, "x.npy").values, (std::vector<float>{0.5f, -2.25f}));

  bytes.pop_back();
  EXPECT_EQ(error_of([&] { tensors::parse_npy(bytes, "x.npy"); }), "x.npy: .npy data is 15 bytes, shape (2,) needs 16");
  std::string fortran = header;
  fortran.replace(fortran.find("False"), 5, "True ");
  const std::string fortran_head = preamble + static_cast<char>(fortran.size()) + '\0' + fortran;
  std::vector<std::uint8_t> fb(fortran_head.begin(), fortran_head.end());
  fb.insert(fb.end(), p, p + 16);
  EXPECT_EQ(error_of([&] { tensors::parse_npy(fb, "x.npy"); }), "x.npy: .npy array is in Fortran order; save it with numpy.ascontiguousarray");
}

}  // namespace
}  // namespace vitattn::model
