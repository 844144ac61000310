// open_model on hand-made files: which setting wins (the request, then config.json, then the
// file's own __metadata__, then the family's), validation once after all of them, a weight that
// is not finite refused by name, the hub as a callback, and the bytes variant the fuzzers drive.
#include "model/open_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>

#include "checkpoint_builder.hpp"
#include "core/error.hpp"
#include "tensors/safetensors.hpp"
#include "test_util.hpp"

namespace vitattn::model {
namespace {
namespace fs = std::filesystem;

constexpr std::uint64_t D = 8, P = 2, G = 2, MLP = 12;

// One timm block of width d (a classifier of `classes` when > 0): small, and its file says
// nothing about its heads unless its metadata is given.
std::vector<tensors::NamedTensor> timm_tensors(std::uint64_t classes, std::uint64_t d = D) {
  test::CheckpointBuilder b(3);
  b.add_timm_one_block({.d = d, .patch = P, .grid = G, .mlp = MLP, .classes = classes});
  return b.list;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

ModelRequest request_for(const fs::path& path) {
  ModelRequest r;
  r.source = path.string();
  return r;
}

using test::error_of;

bool has_detail(const OpenedModel& m, const std::string& part) {
  return std::any_of(m.details.begin(), m.details.end(), [&](const std::string& d) { return d.find(part) != std::string::npos; });
}

TEST(OpenModel, ConfigHeadsAreUsedWhenTheFileSaysNone) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {});
  // D = 8 is no multiple of 64: without a count from somewhere, nothing can be guessed.
  try {
    open_model(request_for(dir / "m.safetensors"));
    FAIL() << "opened without a head count";
  } catch (const Error& e) {
    ASSERT_TRUE(e.subject()) << e.what();
    EXPECT_EQ(e.subject()->role, roles::head_count);
  }
  write_text(dir / "config.json", R"({"num_attention_heads": 2})");
  const OpenedModel m = open_model(request_for(dir / "m.safetensors"));
  EXPECT_EQ(m.model.n_heads, 2);
  EXPECT_FALSE(m.heads_guessed);
  EXPECT_EQ(m.file, dir / "m.safetensors");
  EXPECT_TRUE(has_detail(m, "settings from " + (dir / "config.json").string())) << m.details.front();
  EXPECT_TRUE(has_detail(m, "2 heads (" + (dir / "config.json").string() + ")"));  // the summary says where from
}

TEST(OpenModel, TheRequestsHeadsWinOverTheConfig) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {});
  write_text(dir / "config.json", R"({"num_attention_heads": 2, "layer_norm_eps": 0.001})");
  ModelRequest r = request_for(dir / "m.safetensors");
  r.overrides.heads = 4;
  const OpenedModel m = open_model(r);
  EXPECT_EQ(m.model.n_heads, 4);
  EXPECT_FLOAT_EQ(m.model.eps, 0.001f);  // what the request leaves alone, the config still says
  r.overrides.eps = 1e-5f;
  EXPECT_FLOAT_EQ(open_model(r).model.eps, 1e-5f);
}

TEST(OpenModel, TheFileAndItsConfigMustAgreeAndTheRequestOverridesBoth) {
  test::TempDir dir;
  const fs::path m = dir / "m.safetensors";
  tensors::write_safetensors(m, timm_tensors(0), {{"num_heads", "2"}});
  write_text(dir / "config.json", R"({"num_attention_heads": 4})");
  EXPECT_EQ(error_of([&] { open_model(request_for(m)); }),
            m.string() + ": its __metadata__ gives 2 heads, " + (dir / "config.json").string() + " gives 4");
  ModelRequest r = request_for(m);
  r.overrides.heads = 4;  // the file against its config is still an error, whatever is asked
  EXPECT_THROW(open_model(r), Error);
  fs::remove(dir / "config.json");
  const OpenedModel o = open_model(r);
  EXPECT_EQ(o.model.n_heads, 4);
  ASSERT_TRUE(o.heads_overridden);
  EXPECT_EQ(o.heads_overridden->said, 2);
  EXPECT_EQ(o.heads_overridden->by, "the file's __metadata__");
  r.overrides.heads = 2;
  EXPECT_FALSE(open_model(r).heads_overridden);
  write_text(dir / "config.json", R"({"num_attention_heads": 2, "hidden_size": 16})");
  EXPECT_EQ(error_of([&] { open_model(request_for(m)); }),
            m.string() + ": " + (dir / "config.json").string() + " says hidden_size 16, the file's model has D = 8");
}

TEST(OpenModel, AGuessedHeadCountComesBackAsData) {
  // D = 128 and nothing saying how many heads: 128 / 64 = 2, said as a structured warning.
  test::TempDir dir;
  tensors::write_safetensors(dir / "wide.safetensors", timm_tensors(0, 128), {});
  const OpenedModel m = open_model(request_for(dir / "wide.safetensors"));
  ASSERT_TRUE(m.heads_guessed);
  EXPECT_EQ(m.heads_guessed->heads, 2);
  EXPECT_EQ(m.heads_guessed->d_model, 128);
  ModelRequest r = request_for(dir / "wide.safetensors");
  r.overrides.heads = 4;
  EXPECT_FALSE(open_model(r).heads_guessed);  // asked for: nothing guessed
}

// Validation happens once, after every setting: a file whose own std is zero is refused naming
// the file, and the same file opens when the request gives a std (it wins over the file's).
TEST(OpenModel, ValidatedOnceAfterTheRequestsSettings) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {{"num_heads", "2"}, {"std", "0,0,0"}});
  EXPECT_EQ(error_of([&] { open_model(request_for(dir / "m.safetensors")); }),
            (dir / "m.safetensors").string() + ": mean must be finite and std finite and positive (a normalisation of "
            "pixels in 0…1: std at least 1e-06, |mean| at most 1000); got mean 0.485000, std 0.000000 for channel 0");
  ModelRequest r = request_for(dir / "m.safetensors");
  r.std = std::array<float, 3>{0.5f, 0.5f, 0.5f};
  r.mean = std::array<float, 3>{0.1f, 0.2f, 0.3f};
  const OpenedModel m = open_model(r);
  EXPECT_EQ(m.model.norm.std, r.std);
  EXPECT_EQ(m.model.norm.mean, r.mean);
  EXPECT_TRUE(has_detail(m, "normalisation mean 0.1,0.2,0.3 std 0.5,0.5,0.5"));
}

// The order of the normalisation's sources: the file's __metadata__, then
// preprocessor_config.json beside it, then the request (--mean/--std), each over the one before.
TEST(OpenModel, TheRequestsNormalisationWinsOverThePreprocessorConfig) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {{"num_heads", "2"}, {"mean", "0.7"}, {"std", "0.9"}});
  write_text(dir / "preprocessor_config.json", R"({"image_mean": [0.4, 0.5, 0.6], "image_std": [0.2, 0.25, 0.3]})");
  const OpenedModel from_config = open_model(request_for(dir / "m.safetensors"));
  EXPECT_EQ(from_config.model.norm.mean, (std::array<float, 3>{0.4f, 0.5f, 0.6f}));  // over the file's
  EXPECT_EQ(from_config.model.norm.std, (std::array<float, 3>{0.2f, 0.25f, 0.3f}));
  ModelRequest r = request_for(dir / "m.safetensors");
  r.mean = std::array<float, 3>{0.1f, 0.2f, 0.3f};
  r.std = std::array<float, 3>{0.35f, 0.45f, 0.55f};
  const OpenedModel asked = open_model(r);
  EXPECT_EQ(asked.model.norm.mean, r.mean);
  EXPECT_EQ(asked.model.norm.std, r.std);
  EXPECT_TRUE(has_detail(asked, "normalisation mean 0.1,0.2,0.3 std 0.35,0.45,0.55"));
  r.std.reset();  // each of the two on its own: the mean asked for, the config's std
  const OpenedModel mean_only = open_model(r);
  EXPECT_EQ(mean_only.model.norm.mean, r.mean);
  EXPECT_EQ(mean_only.model.norm.std, (std::array<float, 3>{0.2f, 0.25f, 0.3f}));
}

TEST(OpenModel, ANonFiniteWeightIsRefusedNamingTheFileAndTheTensor) {
  test::TempDir dir;
  std::vector<tensors::NamedTensor> t = timm_tensors(0);
  for (tensors::NamedTensor& n : t)
    if (n.name == "blocks.0.mlp.fc1.weight") n.values[5] = std::numeric_limits<float>::quiet_NaN();
  tensors::write_safetensors(dir / "nan.safetensors", t, {{"num_heads", "2"}});
  const std::string error = error_of([&] { open_model(request_for(dir / "nan.safetensors")); });
  EXPECT_EQ(error.rfind((dir / "nan.safetensors").string() + ": blocks.0.mlp.fc1.weight holds a non-finite value", 0), 0u)
      << error;
}

TEST(OpenModel, AConfigPatchSizeThatDisagreesIsRefused) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {{"num_heads", "2"}});
  write_text(dir / "config.json", R"({"patch_size": 16})");
  EXPECT_EQ(error_of([&] { open_model(request_for(dir / "m.safetensors")); }),
            (dir / "m.safetensors").string() + ": its config says patch_size 16, its patch embedding has 2");
}

// A vision-language config (CLIPModel, SiglipModel) keeps the image tower's settings under
// vision_config; hidden_act names the activation; a model_type whose family's names the file
// does not use leaves detection to the names.
TEST(OpenModel, VisionConfigAndHiddenActAreRead) {
  test::TempDir dir;
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(0), {});
  write_text(dir / "config.json", R"({"model_type": "vit", "num_attention_heads": 4,
    "vision_config": {"num_attention_heads": 2, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-5}})");
  const OpenedModel m = open_model(request_for(dir / "m.safetensors"));
  EXPECT_EQ(m.model.n_heads, 2);  // the vision tower's, not the top level's
  EXPECT_EQ(m.model.gelu, Gelu::quick);
  EXPECT_FLOAT_EQ(m.model.eps, 1e-5f);
  EXPECT_TRUE(has_detail(m, "family dino")) << m.details.back();  // timm names without a head: not hf-vit
  write_text(dir / "config.json", R"({"num_attention_heads": 2, "hidden_act": "gelu_pytorch_tanh"})");
  EXPECT_EQ(open_model(request_for(dir / "m.safetensors")).model.gelu, Gelu::tanh);
  ModelRequest asked = request_for(dir / "m.safetensors");
  asked.overrides.gelu = Gelu::erf;  // the request wins over the config
  EXPECT_EQ(open_model(asked).model.gelu, Gelu::erf);
  write_text(dir / "config.json", R"({"num_attention_heads": 2, "hidden_act": "silu"})");
  EXPECT_EQ(error_of([&] { open_model(request_for(dir / "m.safetensors")); }),
            (dir / "config.json").string() +
                ": hidden_act is \"silu\", expected gelu, quick_gelu, gelu_pytorch_tanh or gelu_new");
}

// The hub is the caller's callback: a hub name goes to it, and the folder of the file it gives
// is where config.json is read from (class names included); any other source is a path.
TEST(OpenModel, AHubNameGoesThroughTheCallbackAndItsFolderGivesTheSettings) {
  test::TempDir dir;
  fs::create_directories(dir / "snapshot");
  tensors::write_safetensors(dir / "snapshot" / "model.safetensors", timm_tensors(3), {});
  write_text(dir / "snapshot" / "config.json",
             R"({"num_attention_heads": 2, "id2label": {"0": "cat", "1": "dog", "2": "owl"}})");
  std::vector<std::string> asked;
  ModelRequest r;
  r.source = "hub:acme/tiny";
  r.labels = true;
  r.hub = [&](const std::string& source) -> std::optional<fs::path> {
    asked.push_back(source);
    if (source.rfind("hub:", 0) != 0) return std::nullopt;
    return dir / "snapshot" / "model.safetensors";
  };
  const OpenedModel m = open_model(r);
  EXPECT_EQ(asked, std::vector<std::string>{"hub:acme/tiny"});
  EXPECT_EQ(m.model.n_heads, 2);
  EXPECT_EQ(m.labels.names, (std::vector<std::string>{"cat", "dog", "owl"}));
  EXPECT_TRUE(has_detail(m, "class names: " + (dir / "snapshot" / "config.json").string()));
  // Declined by the callback: the source is a path.
  tensors::write_safetensors(dir / "plain.safetensors", timm_tensors(0), {{"num_heads", "2"}});
  r.source = (dir / "plain.safetensors").string();
  EXPECT_EQ(open_model(r).file, dir / "plain.safetensors");
  r.labels = false;
  r.source = (dir / "snapshot" / "model.safetensors").string();
  EXPECT_TRUE(open_model(r).labels.names.empty());  // not asked for: not looked for
}

TEST(OpenModel, TheSeededModelTakesTheRequestsNormalisation) {
  ModelRequest r;
  r.shape = SeededShape{32, 8, 24, 8};
  r.seed = 4;
  r.mean = std::array<float, 3>{0.25f, 0.25f, 0.25f};
  const OpenedModel m = open_model(r);
  EXPECT_EQ(m.model.norm.mean, r.mean);
  EXPECT_TRUE(m.file.empty());
  EXPECT_TRUE(has_detail(m, "seeded model (seed 4, untrained): S=32 P=8 D=24 d_k=8"));
}

// The bytes variant runs the same steps: the same model as the file, labels from __metadata__,
// errors naming the name given, and a key refused for safetensors.
TEST(OpenModel, BytesOpenLikeTheFile) {
  test::TempDir dir;
  const std::map<std::string, std::string> meta{{"num_heads", "2"}, {"classes", "a, b, c"}};
  tensors::write_safetensors(dir / "m.safetensors", timm_tensors(3), meta);
  ModelRequest r = request_for(dir / "m.safetensors");
  r.labels = true;
  const OpenedModel a = open_model(r);
  const OpenedModel b = open_model_bytes(tensors::encode_safetensors(timm_tensors(3), meta), "mem.safetensors", r);
  EXPECT_EQ(a.model.blocks.at(0).w_qkv, b.model.blocks.at(0).w_qkv);
  EXPECT_EQ(a.model.w_head, b.model.w_head);
  EXPECT_EQ(b.labels.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(b.labels.source, "__metadata__.classes");
  std::vector<tensors::NamedTensor> t = timm_tensors(0);
  t.back().values[0] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(error_of([&] { open_model_bytes(tensors::encode_safetensors(t, {{"num_heads", "2"}}), "mem.safetensors", {}); })
                .rfind("mem.safetensors: blocks.0.mlp.fc2.weight holds a non-finite value", 0),
            0u);
  ModelRequest keyed;
  keyed.key = "state_dict";
  EXPECT_EQ(error_of([&] { open_model_bytes(tensors::encode_safetensors(timm_tensors(0), {}), "mem.safetensors", keyed); })
                .rfind("mem.safetensors: a key (state_dict) picks a dict inside a PyTorch file", 0),
            0u);
}

}  // namespace
}  // namespace vitattn::model
