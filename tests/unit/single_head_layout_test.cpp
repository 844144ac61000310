// The native model layout: save → open gives the same floats; bad files are refused by name.
#include "model/single_head_layout.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/seeded_model.hpp"
#include "files/file_io.hpp"
#include "model/open_model.hpp"
#include "model/rgb_triplet.hpp"
#include "tensors/safetensors.hpp"
#include "test_util.hpp"

namespace vitattn::model {
namespace {

// The file opened as the binary opens it.
VitModel load_model(const std::filesystem::path& path) {
  ModelRequest request;
  request.source = path.string();
  return open_model(request).model;
}

VitModel parse_model(std::vector<std::uint8_t> bytes, const std::string& name) {
  return open_model_bytes(std::move(bytes), name, ModelRequest{}).model;
}

std::string load_error(const std::filesystem::path& p) {
  try {
    load_model(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The layout as models/README.md spells it, without the optional biases.
std::vector<tensors::NamedTensor> native_tensors(const VitModel& m) {
  auto v = [](const auto& x) { return std::vector<float>(x.data(), x.data() + x.size()); };
  const auto d = static_cast<std::uint64_t>(m.d_model()), p = static_cast<std::uint64_t>(m.patch_size),
             dk = static_cast<std::uint64_t>(m.d_head()), t = static_cast<std::uint64_t>(m.pos_embed.rows());
  const Matrix& w = m.blocks.at(0).w_qkv;
  const auto dki = static_cast<Eigen::Index>(dk);
  return {{"patch_embed.proj.weight", {d, 3, p, p}, v(m.w_patch)},
          {"cls_token", {1, 1, d}, v(m.cls_token)},
          {"pos_embed", {1, t, d}, v(m.pos_embed)},
          {"attn.q.weight", {dk, d}, v(Matrix(w.topRows(dki)))},
          {"attn.k.weight", {dk, d}, v(Matrix(w.middleRows(dki, dki)))},
          {"attn.v.weight", {dk, d}, v(Matrix(w.bottomRows(dki)))}};
}

TEST(ModelFile, SaveThenLoadIsBitIdentical) {
  test::TempDir dir;
  VitModel m = make_seeded_model(SeededShape{32, 8, 24, 8}, 11);
  m.norm.mean = {0.1f, 0.2f, 0.3f};
  m.norm.std = {0.7f, 0.8f, 0.9f};
  save_model(dir / "m.safetensors", m);
  const VitModel back = load_model(dir / "m.safetensors");
  EXPECT_EQ(back.w_patch, m.w_patch);
  EXPECT_EQ(back.b_patch, m.b_patch);
  EXPECT_EQ(back.cls_token, m.cls_token);
  EXPECT_EQ(back.pos_embed, m.pos_embed);
  ASSERT_EQ(back.n_layers(), 1);
  EXPECT_EQ(back.blocks[0].w_qkv, m.blocks[0].w_qkv);
  EXPECT_EQ(back.blocks[0].b_qkv, m.blocks[0].b_qkv);
  EXPECT_EQ(back.n_heads, 1);
  EXPECT_TRUE(has_single_head_layout(back));
  EXPECT_EQ(back.norm.mean, m.norm.mean);
  EXPECT_EQ(back.norm.std, m.norm.std);
  EXPECT_EQ(back.grid_h * back.patch_size, 32);
  EXPECT_EQ(encode_model(back), encode_model(m));  // saving it again writes the same bytes
}

TEST(ModelFile, OnlyTheSingleHeadLayoutIsSaved) {
  VitModel m = make_seeded_model(SeededShape{32, 8, 24, 8}, 11);
  m.n_heads = 2;
  try {
    encode_model(m);
    FAIL() << "two heads written as the single-head layout";
  } catch (const Error& e) {
    ASSERT_TRUE(e.subject());
    EXPECT_EQ(e.subject()->role, model::roles::saved_model);
  }
}

TEST(ModelFile, BiasesAreOptionalAndShapesComeFromTheTensors) {
  test::TempDir dir;
  const VitModel m = make_seeded_model(SeededShape{48, 16, 20, 6}, 2);
  tensors::write_safetensors(dir / "m.safetensors", native_tensors(m), {});
  const VitModel back = load_model(dir / "m.safetensors");
  EXPECT_EQ(back.patch_size, 16);
  EXPECT_EQ(back.d_model(), 20);
  EXPECT_EQ(back.d_head(), 6);
  EXPECT_EQ(back.grid_h * back.patch_size, 48);
  EXPECT_EQ(back.blocks.at(0).b_qkv.size(), 0);  // no bias: none added
  EXPECT_EQ(back.norm.mean, Normalization{}.mean);
  // Saved again, the absent biases are written as zeros, as a seeded model's are.
  EXPECT_EQ(encode_model(back), encode_model(m));
}

TEST(ModelFile, RejectsMissingMisshapedAndNonFiniteTensors) {
  test::TempDir dir;
  const VitModel m = make_seeded_model(SeededShape{32, 8, 24, 8}, 3);

  auto t = native_tensors(m);
  t.erase(t.begin() + 4);  // attn.k.weight
  tensors::write_safetensors(dir / "missing.safetensors", t, {});
  EXPECT_NE(load_error(dir / "missing.safetensors").find("missing attn.k.weight"), std::string::npos)
      << load_error(dir / "missing.safetensors");

  t = native_tensors(m);
  t[3].shape = {4, 48};  // attn.q.weight: d_k=4 but k, v have 8
  t[3].values.resize(4 * 48);
  tensors::write_safetensors(dir / "misshaped.safetensors", t, {});
  EXPECT_NE(load_error(dir / "misshaped.safetensors").find("attn.q.weight is [4, 48], expected [4, 24]"),
            std::string::npos)
      << load_error(dir / "misshaped.safetensors");

  t = native_tensors(m);
  t[5].values[7] = std::numeric_limits<float>::infinity();
  tensors::write_safetensors(dir / "inf.safetensors", t, {});
  EXPECT_NE(load_error(dir / "inf.safetensors").find("attn.v.weight holds a non-finite value"), std::string::npos)
      << load_error(dir / "inf.safetensors");

  t = native_tensors(m);
  t[2].shape = {1, 16, 24};  // 15 patches: not a square grid
  t[2].values.resize(16 * 24);
  tensors::write_safetensors(dir / "grid.safetensors", t, {});
  EXPECT_NE(load_error(dir / "grid.safetensors").find("square"), std::string::npos);

  tensors::write_safetensors(dir / "meta.safetensors", native_tensors(m), {{"mean", "0.5,0.5"}});
  EXPECT_NE(load_error(dir / "meta.safetensors").find("__metadata__.mean is \"0.5,0.5\""), std::string::npos)
      << load_error(dir / "meta.safetensors");
}

TEST(ModelFile, ParseFromBytesMatchesLoadFromFile) {
  // open_model_bytes is what the fuzzer drives; open_model must stay the same thing read from a file.
  test::TempDir dir;
  const VitModel m = make_seeded_model(SeededShape{32, 8, 24, 8}, 5);
  const auto bytes = tensors::encode_safetensors(native_tensors(m), {{"mean", "0.1,0.2,0.3"}});
  tensors::write_safetensors(dir / "m.safetensors", native_tensors(m), {{"mean", "0.1,0.2,0.3"}});
  const VitModel a = parse_model(bytes, "m.safetensors");
  const VitModel b = load_model(dir / "m.safetensors");
  EXPECT_EQ(a.w_patch, b.w_patch);
  EXPECT_EQ(a.pos_embed, b.pos_embed);
  EXPECT_EQ(a.blocks.at(0).w_qkv, b.blocks.at(0).w_qkv);
  EXPECT_EQ(a.norm.mean, b.norm.mean);
  auto broken = bytes;
  broken.resize(broken.size() - 1);
  try {
    parse_model(broken, "cut.safetensors");
    FAIL() << "a file one byte short must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cut.safetensors: ", 0), 0u) << e.what();
  }
}

TEST(ParseRgbTriplet, AcceptsThreeNumbersOnly) {
  EXPECT_EQ(parse_rgb_triplet("0.5, 0.25,1", "x"), (std::array<float, 3>{0.5f, 0.25f, 1.0f}));
  EXPECT_THROW(parse_rgb_triplet("0.5,0.5", "x"), Error);
  EXPECT_THROW(parse_rgb_triplet("0.5,0.5,0.5,0.5", "x"), Error);
  EXPECT_THROW(parse_rgb_triplet("a,b,c", "x"), Error);
  EXPECT_THROW(parse_rgb_triplet("nan,1,1", "x"), Error);
}

TEST(ParseRgbTriplet, FormatGivesBackTheSameFloats) {
  const std::array<float, 3> v{0.1f, 1.0f / 3.0f, 1e-7f};
  EXPECT_EQ(parse_rgb_triplet(format_rgb_triplet(v), "x"), v);
}

}  // namespace
}  // namespace vitattn::model
