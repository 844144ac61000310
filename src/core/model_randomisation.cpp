#include "model_randomisation.hpp"

#include <cmath>
#include <numbers>

#include "error.hpp"
#include "splitmix64.hpp"

namespace vitattn {
namespace {

// `count` values of N(mean, std²), as the header defines them, for tensor t of block l.
template <typename Values>
void redraw(Values& values, int layer, int tensor, std::uint64_t seed) {
  const Eigen::Index n = values.size();
  if (n == 0) return;
  const double mean = values.template cast<double>().mean();
  const double var = (values.template cast<double>().array() - mean).square().mean();
  const double sd = std::sqrt(var);
  constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  const auto stream = static_cast<std::uint64_t>(static_cast<unsigned>(layer * 64 + tensor));
  std::uint64_t state = seed ^ (stream * kGolden);
  constexpr double k53 = 9007199254740992.0;  // 2^53
  for (Eigen::Index i = 0; i < n; ++i) {
    const double u1 = (static_cast<double>(splitmix64(state) >> 11) + 1.0) / k53;
    const double u2 = static_cast<double>(splitmix64(state) >> 11) / k53;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    values.data()[i] = static_cast<float>(mean + sd * z);
  }
}

void redraw_matrix(WeightMatrix& w, int layer, int tensor, std::uint64_t seed) {
  if (w.size() == 0) return;
  Matrix values = w;  // the tensor's own values, copied out of a file it may be read from in place
  redraw(values, layer, tensor, seed);
  w = std::move(values);
}

}  // namespace

EncoderBlock randomised_block(const EncoderBlock& block, int layer, std::uint64_t seed) {
  EncoderBlock b = block;
  redraw(b.norm1.weight, layer, 0, seed);
  redraw(b.norm1.bias, layer, 1, seed);
  redraw_matrix(b.w_qkv, layer, 2, seed);
  redraw(b.b_qkv, layer, 3, seed);
  redraw_matrix(b.w_proj, layer, 4, seed);
  redraw(b.b_proj, layer, 5, seed);
  redraw(b.ls1, layer, 6, seed);
  redraw(b.norm2.weight, layer, 7, seed);
  redraw(b.norm2.bias, layer, 8, seed);
  redraw_matrix(b.w_fc1, layer, 9, seed);
  redraw(b.b_fc1, layer, 10, seed);
  redraw_matrix(b.w_fc2, layer, 11, seed);
  redraw(b.b_fc2, layer, 12, seed);
  redraw(b.ls2, layer, 13, seed);
  return b;
}

VitModel with_top_blocks(const VitModel& model, const std::vector<EncoderBlock>& randomised, int count) {
  const int n = model.n_layers();
  if (count < 0 || count > n || static_cast<int>(randomised.size()) != n)
    throw Error("with_top_blocks: a block count outside the model's layers");
  VitModel out = model;
  for (int l = n - count; l < n; ++l) out.blocks[static_cast<std::size_t>(l)] = randomised[static_cast<std::size_t>(l)];
  return out;
}

}  // namespace vitattn
