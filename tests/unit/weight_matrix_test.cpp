// Weights read in place: a WeightMatrix owns its values or keeps their holder alive; a
// checkpoint's aligned float32 tensors become views of the file's mapping, and everything else
// (F16, a misaligned data section) an owned copy with the same values; a model file cut short
// after loading fails the forward pass with the file's name instead of ending the process.
#include "core/weight_matrix.hpp"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cstring>
#include <filesystem>
#include <random>

#include "checkpoint_builder.hpp"
#include "core/gemm.hpp"
#include "core/vit.hpp"
#include "files/file_io.hpp"
#include "files/mapped_file.hpp"
#include "model/open_model.hpp"
#include "model/vit_loader.hpp"
#include "tensors/safetensors.hpp"
#include "tensors/tensor_file.hpp"
#include "test_util.hpp"

namespace vitattn {
namespace {
namespace fs = std::filesystem;
using tensors::NamedTensor;

TEST(WeightMatrix, OwnsAMatrixOrKeepsTheHolderOfItsValuesAlive) {
  std::mt19937 rng(1);
  const Matrix values = test::random_matrix(3, 5, rng);
  WeightMatrix owned = values;  // a copy of its own
  EXPECT_TRUE(owned.owned());
  EXPECT_EQ(owned, values);
  EXPECT_NE(owned.data(), values.data());

  auto holder = std::make_shared<std::vector<float>>(values.data(), values.data() + values.size());
  std::weak_ptr<std::vector<float>> watch = holder;
  WeightMatrix view(holder->data(), 3, 5, holder);
  holder.reset();
  EXPECT_FALSE(watch.expired());  // the view keeps its values alive
  EXPECT_FALSE(view.owned());
  EXPECT_EQ(view, values);
  {
    const WeightMatrix copy = view;  // shares, does not copy
    EXPECT_EQ(copy.data(), view.data());
    view = Matrix(values * 2.0f);  // a new matrix of its own: the copy still reads the old values
    EXPECT_EQ(copy, values);
    EXPECT_EQ(view, Matrix(values * 2.0f));
  }
  EXPECT_TRUE(watch.expired());  // no one holds the old values any more
  EXPECT_EQ(WeightMatrix().size(), 0);
}

constexpr std::uint64_t D = 64, P = 16, G = 8, MLP = 128;

// A one-block timm ViT of width 64 on an 8×8 grid: big enough that its products run on two
// threads (gemm.hpp), small enough for a unit test.
std::vector<NamedTensor> timm_tensors() {
  test::CheckpointBuilder b(5, 0.2f);
  b.add_timm_one_block({.d = D, .patch = P, .grid = G, .mlp = MLP, .classes = 10, .qkv_bias = true});
  return b.list;
}

// The same tensors with the data section `shift` bytes later (spaces after the JSON header):
// safetensors only promises offsets that are multiples of the dtype size, not aligned addresses.
std::vector<std::uint8_t> shifted(const std::vector<std::uint8_t>& file, std::uint64_t shift) {
  std::uint64_t len = 0;
  std::memcpy(&len, file.data(), 8);
  std::string bytes(file.begin(), file.end());
  bytes.insert(8 + len, shift, ' ');
  len += shift;
  bytes.replace(0, 8, reinterpret_cast<const char*>(&len), 8);
  return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

// The same tensors stored as F16 (their values rounded to half first, so both hold the same numbers).
std::vector<std::uint8_t> as_f16(std::vector<NamedTensor> tensors, std::vector<NamedTensor>& rounded) {
  std::string header = "{";
  std::vector<std::uint8_t> data;
  for (NamedTensor& t : tensors) {
    for (float& v : t.values) {
      const Eigen::half h(v);
      v = static_cast<float>(h);
      const auto bits = Eigen::numext::bit_cast<std::uint16_t>(h);
      data.push_back(static_cast<std::uint8_t>(bits & 0xff));
      data.push_back(static_cast<std::uint8_t>(bits >> 8));
    }
    header += (header.size() > 1 ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"F16\",\"shape\":" +
              tensors::shape_string(t.shape) + ",\"data_offsets\":[" + std::to_string(data.size() - 2 * t.values.size()) +
              "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  rounded = tensors;
  const std::uint64_t len = header.size();
  std::string bytes(reinterpret_cast<const char*>(&len), 8);
  bytes += header;
  bytes.append(data.begin(), data.end());
  return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

bool inside(const float* p, const tensors::TensorFile& st) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(p);
  return st.mapping() && b >= st.mapping()->data() && b < st.mapping()->data() + st.mapping()->size();
}

// Every matrix of the model: (name in the file, the matrix it became).
std::vector<std::pair<std::string, const WeightMatrix*>> matrices(const VitModel& m) {
  const EncoderBlock& b = m.blocks.at(0);
  return {{"patch_embed.proj.weight", &m.w_patch}, {"pos_embed", &m.pos_embed},     {"blocks.0.attn.qkv.weight", &b.w_qkv},
          {"blocks.0.attn.proj.weight", &b.w_proj}, {"blocks.0.mlp.fc1.weight", &b.w_fc1}, {"blocks.0.mlp.fc2.weight", &b.w_fc2},
          {"head.weight", &m.w_head}};
}

const NamedTensor& tensor(const std::vector<NamedTensor>& list, const std::string& name) {
  for (const NamedTensor& t : list)
    if (t.name == name) return t;
  throw Error("no tensor " + name);
}

void expect_values(const VitModel& m, const std::vector<NamedTensor>& file, const std::string& what) {
  for (const auto& [name, w] : matrices(m)) {
    const std::vector<float>& v = tensor(file, name).values;
    EXPECT_EQ(std::vector<float>(w->data(), w->data() + w->size()), v) << what << ": " << name;
  }
}

TEST(WeightsInPlace, AlignedFloat32TensorsAreViewsOfTheMappingTheRestOwnedCopies) {
  test::TempDir dir;
  const std::vector<NamedTensor> t = timm_tensors();
  const std::vector<std::uint8_t> aligned = tensors::encode_safetensors(t, {});
  std::vector<NamedTensor> rounded;
  const std::pair<const char*, std::vector<std::uint8_t>> files[] = {
      {"aligned.safetensors", aligned}, {"shifted4.safetensors", shifted(aligned, 4)},
      {"shifted2.safetensors", shifted(aligned, 2)}, {"f16.safetensors", as_f16(t, rounded)}};
  for (const auto& [name, bytes] : files) {
    files::write_file_atomic(dir / name, bytes.data(), bytes.size());
    const tensors::TensorFile st = tensors::load_tensor_file(dir / name);
    const model::LoadedVit v = model::load_vit(st);
    const bool f16 = std::string(name) == "f16.safetensors", misaligned = std::string(name) == "shifted2.safetensors";
    for (const auto& [tensor_name, w] : matrices(v.model)) {
      // A data section 4 bytes later is still float-aligned: read in place too.
      EXPECT_EQ(w->owned(), f16 || misaligned) << name << ": " << tensor_name;
      EXPECT_EQ(inside(w->data(), st), !(f16 || misaligned)) << name << ": " << tensor_name;
    }
    expect_values(v.model, f16 ? rounded : t, name);
  }
}

// The forward reads the mapping after loading; another program then cuts the file short. The
// pages are gone (SIGBUS on whichever thread reads them, a GEMM worker included): the forward
// must fail with the file's name, and so must every forward after it, and the process go on.
TEST(WeightsInPlace, AModelFileCutShortAfterLoadingFailsTheForwardNotTheProcess) {
  test::TempDir dir;
  const fs::path path = dir / "m.safetensors";
  tensors::write_safetensors(path, timm_tensors(), {});
  model::ModelRequest r;
  r.source = path.string();
  const model::OpenedModel opened = model::open_model(r);
  ImageTensor image;
  image.height = image.width = static_cast<int>(G * P);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  image.chw.resize(3 * G * P * G * P);
  for (float& x : image.chw) x = normal(rng);

  const int threads = gemm_threads();
  set_gemm_threads(2);
  const ForwardResult before = forward(opened.model, image);
  EXPECT_TRUE(before.logits.allFinite());
  EXPECT_EQ(opened.model.weights_lost(), "");

  fs::resize_file(path, 4096);  // the header stays; every weight's pages are gone
  const std::string expected = path.string() + ": the model file was cut short while the run was reading its weights";
  for (int round = 0; round < 2; ++round) {
    const std::string error = test::error_of([&] { forward(opened.model, image); });
    EXPECT_EQ(error.rfind(expected, 0), 0u) << "round " << round << ": " << error;
  }
  ForwardOptions first_layer;
  first_layer.last_layer = 0;
  EXPECT_EQ(test::error_of([&] { forward(opened.model, image, first_layer); }).rfind(expected, 0), 0u);
  set_gemm_threads(threads);
}

}  // namespace
}  // namespace vitattn
