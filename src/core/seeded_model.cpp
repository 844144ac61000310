#include "seeded_model.hpp"

#include <cmath>
#include <string>

#include "error.hpp"

namespace vitattn {

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

float SplitMix64::uniform_pm1() {
  const auto top24 = static_cast<std::int32_t>(next() >> 40);  // [0, 2^24)
  return static_cast<float>(top24 - (1 << 23)) * 0x1p-23f;
}

namespace {

// Fill with uniform(-bound, bound). Products of two floats are correctly rounded by
// IEEE 754, so the bytes do not depend on the platform either.
template <typename M>
void fill_uniform(M& m, SplitMix64& rng, float bound) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform_pm1() * bound;
}

}  // namespace

VitModel make_seeded_model(const SeededShape& s, std::uint64_t seed) {
  if (s.patch_size <= 0 || s.img_size <= 0 || s.d_model <= 0 || s.d_k <= 0)
    throw Error("seeded model: image size, patch size, d_model and d_k must be positive");
  if (s.img_size % s.patch_size != 0)
    throw Error("seeded model: image size " + std::to_string(s.img_size) + " is not a multiple of the patch size " +
                std::to_string(s.patch_size));
  const int grid = s.img_size / s.patch_size;
  const int patch_dim = 3 * s.patch_size * s.patch_size;

  VitModel m;
  m.patch_size = s.patch_size;
  m.n_heads = 1;
  m.grid_h = m.grid_w = grid;
  m.pos_prefix = 1;
  Matrix w_patch(s.d_model, patch_dim), pos_embed(1 + grid * grid, s.d_model);
  m.b_patch = RowVector::Zero(s.d_model);
  m.cls_token.resize(s.d_model);
  Matrix w_q(s.d_k, s.d_model), w_k(s.d_k, s.d_model), w_v(s.d_k, s.d_model);

  // Bounds as PyTorch's default Linear/Conv init (uniform ±1/√fan_in), except where an
  // untrained head would otherwise show nothing: position embeddings are kept small
  // (as timm's std 0.02) so the map follows image content rather than position, and the
  // query/key gains are raised so class-token scores spread over a few units instead of
  // a flat softmax. The draw order is fixed: same seed, same weights.
  SplitMix64 rng(seed);
  const float patch_bound = 1.0f / std::sqrt(static_cast<float>(patch_dim));
  const float qk_bound = kQueryKeyGain / std::sqrt(static_cast<float>(s.d_model));
  const float v_bound = 1.0f / std::sqrt(static_cast<float>(s.d_model));
  fill_uniform(w_patch, rng, patch_bound);
  fill_uniform(m.cls_token, rng, 1.0f);
  fill_uniform(pos_embed, rng, kPosEmbedBound);
  fill_uniform(w_q, rng, qk_bound);
  fill_uniform(w_k, rng, qk_bound);
  fill_uniform(w_v, rng, v_bound);

  m.w_patch = std::move(w_patch);
  m.pos_embed = std::move(pos_embed);

  EncoderBlock block;
  // [W_Q; W_K; W_V] (3·d_k, d_model), zero biases (3·d_k)
  Matrix w_qkv(3 * s.d_k, s.d_model);
  w_qkv << w_q, w_k, w_v;
  block.w_qkv = std::move(w_qkv);
  block.b_qkv = RowVector::Zero(3 * s.d_k);
  m.blocks.push_back(std::move(block));
  return m;
}

}  // namespace vitattn
