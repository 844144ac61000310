#pragma once
// A checkpoint written by hand for the loader tests: named tensors of uniform values in [−1, 1],
// drawn from one seeded generator in the order they are added, so that two namings of the same
// roles added in the same order hold the same numbers.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"
#include "tensors/tensor_file.hpp"

namespace vitattn::test {

struct CheckpointBuilder {
  explicit CheckpointBuilder(unsigned seed) : rng(seed) {}
  std::vector<io::NamedTensor> list;
  std::mt19937 rng;

  void add(const std::string& name, std::vector<std::uint64_t> shape) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    list.push_back({name, std::move(shape), std::move(v)});
  }
  // The file these tensors make, as safetensors bytes parsed back ("m.safetensors").
  io::TensorFile parse(const std::map<std::string, std::string>& meta = {}) const {
    return io::TensorFile::parse(io::encode_safetensors(list, meta), "m.safetensors");
  }
};

}  // namespace vitattn::test
