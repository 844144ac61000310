#pragma once
// Which words of a text mattered to an image-text logit: Chefer et al. (2021)'s relevance on a
// text tower (text_tower.hpp), as Transformer-MM-Explainability's CLIP notebook computes R_text
// (CLIP_explainability.ipynb: interpret's text part, show_heatmap_on_text's R_text[EOT, 1:EOT]).
//
// The target is CLIP's logit y = exp(logit_scale)·cos(u, e): u a given L2-normalised image
// embedding, e the text's embedding (logits_per_image). Its gradients at each block's attention
// probabilities come from one backward through the text's tape (encode_text's): through the
// projection and ln_final at the pooled row, then the blocks (vit_backward.hpp's block_backward,
// the image tower's own). With Ā_l = mean over heads of max(0, ∂y/∂A_l ⊙ A_l), R = I and
// R ← R + Ā_l·R for the layers from the start layer to the last (chefer_row_step, relevance.hpp);
// the words' relevance is R's pooled row. Under the causal mask Ā_l is 0 above the diagonal, so
// that row has nothing after the pooled position: computing only up to the EOT loses nothing.
//
// The pooled row is a parameter of the backward: CLIP pools the end-of-text token, SigLIP the
// last position (text_tower.hpp pooled_position).
#include <cstdint>
#include <vector>

#include "tensor.hpp"
#include "text_tower.hpp"
#include "vit.hpp"

namespace vitattn {

// ∂y/∂x (W) at the pooled row x (W) of the last block's output (before the final norm), for the
// tower's head: the final norm, the projection (with SigLIP's bias), L2 normalisation,
// exp(logit_scale)·(u · ·) (+ SigLIP's logit_bias, a constant). Throws Error when u is not the
// text embedding's width.
RowVector text_logit_gradient(const TextTower& tower, const RowVector& pooled, const RowVector& image_embedding);

// The rollout's pooled row R[pooled_row, :] for every start layer from `first_layer` on:
// (n_layers, n) with n the tape's positions, row s the rollout over layers s … L−1 (rows before
// first_layer zeros). One backward serves them all: folding the layers from the last down, the
// row after layer s is the one that starts at s. d_pooled (W) is ∂y/∂x_out at pooled_row (the
// head's gradient, as clip_logit_gradient's). Throws Error for a tape, row or layer out of range.
Matrix relevance_by_start_layer(const TextTower& tower, const ForwardTape& tape, int pooled_row,
                                const RowVector& d_pooled, int first_layer);

// A start layer of a tower of n_layers: a layer's index, or −K for the last K (every layer when
// there are fewer; relevance.hpp first_layer): the notebook's start_layer_text, whose default
// −1 is the last layer alone. Throws Error for an index ≥ n_layers.
int text_start_layer(int start_layer, int n_layers);

// The word relevance, the notebook's R_text[pooled, words]: one value per token of the prompt
// (text_tower.hpp word_span: CLIP's between SOT and EOT, SigLIP's before its "</s>"), for the
// text `ids` whose tape is `tape` and the image embedding u.
RowVector word_relevance(const TextTower& tower, const std::vector<std::int32_t>& ids, const ForwardTape& tape,
                         const RowVector& image_embedding, int start_layer = -1);

}  // namespace vitattn
