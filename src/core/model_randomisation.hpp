#pragma once
// Cascading model-parameter randomisation (Adebayo et al., "Sanity Checks for Saliency Maps",
// NeurIPS 2018): the blocks' parameters re-drawn from the top block down, so that a map that
// still looks the same once the weights it explains are noise is shown not to depend on them.
//
// Each tensor of a block (norms' weights and biases, q/k/v, projection, MLP, layer scales) is
// replaced by draws from a normal distribution at the tensor's own mean and standard deviation
// (population, ddof 0, over all its values). The draws: value i of tensor t of block l is
// mean + std·z, z = √(−2 ln u₁)·cos(2π u₂) (Box–Muller, the cosine only), u₁ = (a + 1)/2^53 and
// u₂ = b/2^53 with a, b the top 53 bits of the (2i)-th and (2i+1)-th outputs of splitmix64
// seeded with seed ⊕ (l·64 + t)·0x9e3779b97f4a7c15; float32 of the double. So a block's new
// weights depend only on the seed, its index and its own statistics: randomising k blocks is
// randomising k − 1 and one more, and a test can draw them again.
// The tensors' order t: norm1 weight, bias; w_qkv, b_qkv; w_proj, b_proj; ls1; norm2 weight,
// bias; w_fc1, b_fc1; w_fc2, b_fc2; ls2 (an absent one keeps its number).
#include <cstdint>

#include "vit.hpp"

namespace vitattn {

inline constexpr std::uint64_t kRandomisationSeed = 0xadeba4;

// Block `layer` of `model` with every parameter re-drawn (its own values untouched).
EncoderBlock randomised_block(const EncoderBlock& block, int layer, std::uint64_t seed = kRandomisationSeed);

// `model` with its top `count` blocks (n_layers − count … n_layers − 1) replaced by their
// randomised blocks, taken from `randomised` (one per layer, randomised_block of each);
// everything else shared with `model`. Throws Error when count is out of 0 … n_layers.
VitModel with_top_blocks(const VitModel& model, const std::vector<EncoderBlock>& randomised, int count);

}  // namespace vitattn
