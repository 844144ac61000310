#pragma once
// Class-specific relevance maps: where the model sees class c, from the gradients of its
// logit y_c (vit_backward.hpp) and the attention of the forward that recorded the tape.
// Each map is over the patch grid (grid_h, grid_w), before any display scaling. With A_l the
// attention of layer l [H, T, T], G_l = ∂y_c/∂A_l, P the patch tokens (not the class token,
// not the registers) and I the identity:
//
//   chefer        Chefer, Gur, Wolf, "Generic Attention-model Explainability" (ICCV 2021):
//                 R = I; for l = chefer_from … L−1: Ā = mean over heads of max(0, G_l ⊙ A_l),
//                 R ← R + Ā·R. Map = R[0, P]. chefer_from is 0 in the paper; the authors' CLIP
//                 notebook (interpret) starts at the last layer.
//   grad_rollout  jacobgil/vit-explain's gradient rollout, its defects fixed: F = max(0, mean
//                 over heads of A_l ⊙ G_l); the discard_ratio smallest entries of F zeroed (never
//                 the class token's own); a = (F + I)/2 with each ROW renormalised to sum 1
//                 (vit-explain divides column j by row j's sum); R ← a·R from R = I. Map = R[0, P].
//   legrad        Bousselham et al., "LeGrad" (ICCV 2025): for l = legrad_from … L−1, s_l = the
//                 class-c logit read from layer l's output through the final norm and the
//                 classifier; E_l = mean over heads and query rows of max(0, ∂s_l/∂A_l) at the
//                 patch columns. Map = Σ_l E_l.
//   gradcam       Selvaraju et al. (2017) as pytorch-grad-cam applies it to a ViT (target layer
//                 the last block's norm1, the class token dropped): X = that norm1's output at P
//                 (|P|, D), w = mean over P of ∂y_c/∂X (D); map = max(0, X·w).
//   lrp           AttnLRP (Achtibat et al., ICML 2024) as LXT applies it to a ViT (lrp.hpp): the
//                 relevance of y_c at the input pixels, summed over each patch; signed. It runs
//                 its own modified backward through every block (last_layer does not bound it)
//                 and reads the patches the tape recorded.
//
// R[0, P] is for a class-token head. A pooled head (vit_head.hpp) reads other rows, so its maps
// are w·R at P, w the pooling's weights over the tokens: ½(e_0 + e_1) distilled DeiT, the patch
// rows 1/n each for a patch mean (timm's avg pool), ½e_0 + the patch rows ½/n each for
// [class token, patch mean] (HF Dinov2ForImageClassification); for SigLIP's probe head, w is the
// probe's attention fused with its gradient as the method fuses a layer's (mean over heads of
// max(0, ∂y_c/∂a ⊙ a) for chefer, max(0, mean of a ⊙ ∂y_c/∂a) for grad_rollout): Chefer's rule
// for a query that is not one of the tokens.
// Only one row w·R is ever read, so the rollouts run as a row vector from the last layer down,
// r ← r·(I + Ā_l) (chefer) or r ← r·a_l (grad_rollout), in the order the backward hands the
// layers out: the same product, O(T²) a layer instead of O(T³), and no layer's gradients kept.
// `last_layer` bounds the layers used (the one drawn, as --layer does for attention): the
// rollouts fold layers 0 … last_layer, LeGrad sums legrad_from … last_layer, Grad-CAM reads
// block last_layer's norm1. The gradients are always those of the model's own logit (LeGrad's
// are its per-layer logits). The logit is the classifier's or, for a model given zero-shot
// texts (zero_shot.hpp), the image–text logit; LeGrad then follows the authors' text variants
// (legrad_text.hpp: CLIP's per-layer token mean, SigLIP's probe), from legrad_from to the last
// layer.
#include <string>
#include <vector>

#include "lrp.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

// The maps relevance_maps can make, one member per method above; a caller names a method by
// its member (a RelevanceMap), so the core keeps no list of method names: the map methods'
// table (pipeline/map_methods.hpp) holds each method's member beside its name.
struct RelevanceMaps {
  Matrix chefer, grad_rollout, legrad, gradcam, lrp;  // (grid_h, grid_w) each; empty unless asked for
};
using RelevanceMap = Matrix RelevanceMaps::*;

struct RelevanceSettings {
  int class_index = 0;         // c: the logit y_c, before the softmax
  int last_layer = -1;         // −1: the last block
  int legrad_from = -2;        // LeGrad's first layer; −K: the last K layers (all of them when there are fewer)
  int chefer_from = 0;         // Chefer's first layer, counted alike: 0 every layer (the paper's rollout);
                               // −1 the last only (the CLIP notebook's start_layer default)
  float discard_ratio = 0.0f;  // grad_rollout's
  bool scale = true;           // the forward's 1/√d_head
  float lrp_gamma_linear = lrp_default_gamma_linear;  // AttnLRP's γ of the linear layers (lrp.hpp)
  float lrp_gamma_conv = lrp_default_gamma_conv;      // and of the patch embedding
};

// The maps of `methods` (in that order) for one class, from one forward's tape; each
// (grid_h, grid_w). One backward through the encoder serves chefer, grad_rollout and gradcam;
// LeGrad adds one block's backward per layer it sums. Throws Error when the model has no
// classifier, c is not one of its classes, or a layer is out of range.
// lrp_pixels, when given and lrp is asked for, receives its map at the pixels (grid_h·P, grid_w·P).
std::vector<Matrix> relevance_maps(const VitModel& model, const ForwardTape& tape,
                                   const std::vector<RelevanceMap>& methods, const RelevanceSettings& settings,
                                   int grid_h, int grid_w, Matrix* lrp_pixels = nullptr);

// LeGrad's steps, shared with its text-target variants (legrad_text.hpp):
// E_l (1, n_tokens) = mean over heads and query rows of max(0, ∂s/∂A) [head] (queries, n_tokens).
Matrix legrad_layer(const std::vector<Matrix>& d_attention);
// The first layer of a sum or a rollout (LeGrad's, Chefer's): −K the last K layers, all of them
// when the model has fewer. Throws Error naming `what` when a non-negative one is past the
// model's layers.
int first_layer(int from, int n_layers, const char* what);
// One layer of chefer's rollout, R ← R + Ā·R with Ā = mean over heads of max(0, ∂y/∂A_h ⊙ A_h),
// seen from one row r (1, n_tokens) of R with the layers taken from the last down: r ← r·(I + Ā).
// The image maps read the class token's row (or the pooling's); a text's word relevance its
// pooled row (text_relevance.hpp). attention and d_attention: [head] (n_tokens, n_tokens).
void chefer_row_step(Matrix& r, const std::vector<Matrix>& attention, const std::vector<Matrix>& d_attention);

}  // namespace vitattn
