#pragma once
// LeGrad for a text target (Bousselham et al., "LeGrad", ICCV 2025): where an image-text model
// sees a text, from the gradients of the image's similarity to the text embedding read at each
// layer. The two variants follow the authors' legrad/wrapper.py, each map over the patch grid
// (grid_h, grid_w), summed over layers l = first … L−1 (first −K: the last K layers, all of them
// on a model of fewer), with t the text embedding, L2-normalised by the caller, and
// n(v) = v / ‖v‖₂:
//
//   CLIP (LeWrapper.compute_legrad_clip): s_l = t · n(w_embed · LN_f(mean over ALL of layer l's
//        output tokens, the class token included)), the mean, not the class token the model's
//        own embedding reads, and no logit scale; E_l = mean over heads and query rows of
//        max(0, ∂s_l/∂A_l) at the patch columns, A_l block l's attention. Map = Σ_l E_l.
//   SigLIP (LeWrapper.compute_legrad_siglip): s_l = t · n(probe(layer l's output)), the probe
//        head (vit_head.hpp) on the block's output WITHOUT the final norm (post_layernorm), as
//        the reference does (attn_pool(blk.feat_post_mlp)), even at the last layer, where the
//        model's own embedding reads the normed tokens; E_l = mean over heads of
//        max(0, ∂s_l/∂a_l), a_l the probe's attention over the tokens (all patches: SigLIP has
//        no class token). Map = Σ_l E_l. The block's own attention is not read: the probe's
//        gradient is the whole backward.
//        The reference's "empty prompt" correction, when asked for: the same sum for t_empty
//        (the caller's embedding of the text "a photo of a", L2-normalised), min-maxed over the
//        grid; where it exceeds the threshold (0.8) the map is 0. A constant empty map (its
//        min-max 0/0 in the reference, whose comparison is then false) corrects nothing.
//
// The reference's last steps are left out: its min-max of the sum (the pipeline scales maps for
// display) and its bilinear upsampling to pixels (the overlay does). Summing per-layer maps at
// the patch grid and upsampling once is the same as its upsampling each layer's, by linearity.
#include <optional>

#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

struct TextLegradSettings {
  int first_layer = -2;  // the reference's layer_index: −K the last K layers
  bool scale = true;     // the forward's 1/√d_head (CLIP's blocks' backward; the probe's is always scaled)
};

struct EmptyPromptCorrection {
  RowVector embedding;     // t_empty, L2-normalised, as wide as t
  float threshold = 0.8f;  // the reference's correction_threshold
};

// CLIP: the model has an image projection w_embed (d_embed, d_model) and `text` is d_embed
// wide. `tape` from a forward of the image (ForwardOptions::tape). Throws Error otherwise, or
// for a first layer past the model's.
Matrix legrad_clip_text(const VitModel& model, const ForwardTape& tape, const RowVector& text,
                        const TextLegradSettings& settings, int grid_h, int grid_w);

// SigLIP: the model pools with a probe (Pooling::probe) and `text` is d_model wide (the pooled
// row is SigLIP's image embedding); `correction`, when given, as above. Throws Error otherwise.
Matrix legrad_siglip_text(const VitModel& model, const ForwardTape& tape, const RowVector& text,
                          const TextLegradSettings& settings, const std::optional<EmptyPromptCorrection>& correction,
                          int grid_h, int grid_w);

}  // namespace vitattn
