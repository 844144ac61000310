#pragma once
// A checkpoint written by hand for the loader tests: named tensors of uniform values in
// [−scale, scale] (scale 1 unless given), drawn from one seeded generator in the order they are
// added, so that two namings of the same roles added in the same order hold the same numbers.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"
#include "tensors/tensor_file.hpp"

namespace vitattn::test {

// The shape of a one-block ViT in timm naming (CheckpointBuilder::add_timm_one_block).
struct TimmOneBlock {
  std::uint64_t d = 0, patch = 0, grid = 0, mlp = 0;
  std::uint64_t classes = 0;  // a classifier (head.weight, head.bias) when > 0
  bool qkv_bias = false;      // blocks.0.attn.qkv.bias
};

struct CheckpointBuilder {
  explicit CheckpointBuilder(unsigned seed, float range = 1) : rng(seed), scale(range) {}
  std::vector<tensors::NamedTensor> list;
  std::mt19937 rng;
  float scale;

  void add(const std::string& name, std::vector<std::uint64_t> shape) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    list.push_back({name, std::move(shape), std::move(v)});
  }
  // The smallest whole timm ViT: patch embedding, class token, position embedding, one block
  // (norms, qkv, proj, fc1, fc2; of the linear layers' biases only qkv's, when asked), the final
  // norm and the classifier when asked, in that order (so the last tensor is the classifier's
  // bias, or fc2's weight without one). Its file says nothing about its heads.
  void add_timm_one_block(const TimmOneBlock& s) {
    add("patch_embed.proj.weight", {s.d, 3, s.patch, s.patch});
    add("patch_embed.proj.bias", {s.d});
    add("cls_token", {1, 1, s.d});
    add("pos_embed", {1, 1 + s.grid * s.grid, s.d});
    for (const char* norm : {"blocks.0.norm1", "blocks.0.norm2", "norm"}) {
      add(std::string(norm) + ".weight", {s.d});
      add(std::string(norm) + ".bias", {s.d});
    }
    add("blocks.0.attn.qkv.weight", {3 * s.d, s.d});
    if (s.qkv_bias) add("blocks.0.attn.qkv.bias", {3 * s.d});
    add("blocks.0.attn.proj.weight", {s.d, s.d});
    add("blocks.0.mlp.fc1.weight", {s.mlp, s.d});
    add("blocks.0.mlp.fc2.weight", {s.d, s.mlp});
    if (s.classes > 0) {
      add("head.weight", {s.classes, s.d});
      add("head.bias", {s.classes});  // a classifier is whole (layout_check.hpp)
    }
  }
  // The file these tensors make, as safetensors bytes parsed back ("m.safetensors").
  tensors::TensorFile parse(const std::map<std::string, std::string>& meta = {}) const {
    return tensors::TensorFile::parse(tensors::encode_safetensors(list, meta), "m.safetensors");
  }
};

}  // namespace vitattn::test
