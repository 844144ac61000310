#pragma once
// AttnLRP (Achtibat et al., "AttnLRP: Attention-Aware Layer-Wise Relevance Propagation for
// Transformers", ICML 2024) as LXT applies it to a vision transformer (LRP-eXplains-Transformers:
// lxt/efficient/models/vit_torch.py's cp_LRP with zennit's Gamma on the linear layers and the
// patch embedding, examples/vit_torch.py): relevance is gradient × input through a modified
// backward of the logit y_c. The rules, each a step of that backward (d_X is the modified
// gradient at X, R_X = X ⊙ d_X its relevance):
//
//   attention (CP-LRP)  the probabilities A are constants: o = A·v passes d_v = Aᵀ·d_o; nothing
//                       reaches q and k (so rotary positions do not matter either).
//   MLP activation      identity rule: d_h = d_a ⊙ f(h)/h (R_h = R_a), for GELU f(h)/h = Φ(h).
//   LayerNorm           identity rule: its σ is a constant, the mean still flows:
//                       d_x = σ⁻¹·(g − mean(g)), g = d_y ⊙ γ.
//   linear layers       zennit's generalised Gamma rule (gamma_linear_backward) with γ_linear:
//                       every nn.Linear of the tower and its heads (q/k/v, the output projection,
//                       the MLP's two, the probe's, the projection to the joint embedding, the
//                       classifier); the patch embedding, a linear map over patches, with γ_conv.
//   residual, layer scale, pooling means, the cosine's norm: their plain gradient (the norm of
//                       the image embedding a constant, as LayerNorm's σ). Layer scale is a
//                       diagonal linear layer without bias: the Gamma rule on it hands each
//                       output's relevance to its one input whole (up to ε), which is the plain
//                       gradient.
//
// Conservation: R at the logit is y_c (y_c − logit_bias for zero-shot texts). Every rule above
// hands its relevance on whole, except what a bias absorbs (a linear layer's, a LayerNorm's β,
// the position embeddings, the class, distillation and register tokens, which are no pixels),
// what the stabiliser ε takes, and an output that is exactly 0. So on a model without biases,
// positions and extra tokens (zero), Σ over the pixels of R = y_c up to ε's share.
//
// One modified backward a class, after the forward that recorded the tape (ForwardTape,
// patches included). Only rules and activations; the weights' gradients are never formed.
#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

// zennit's stabiliser (zennit/core.py stabilize): z + ε·(sign(z) + [z = 0]), away from zero
// with z's sign, ε = 1e-6.
inline constexpr float lrp_stabilizer = 1e-6f;

// zennit's Gamma rule (zennit/rules.py Gamma) for z = x·Wᵀ + b, in gradient form: the gradient
// d_z (n, d_out) at the output → d_x (n, d_in) with x ⊙ d_x the relevance zennit's rule hands
// to x from R_z = z ⊙ d_z. With W↑ = W + γ·W⁺, W↓ = W + γ·W⁻, b↑ = b + γ·b⁺, b↓ = b + γ·b⁻
// (W⁺ = max(W, 0), W⁻ = min(W, 0), x± alike):
//   positive outputs (z > 0):  z↑ = x⁺·W↑ᵀ + b↑ + x⁻·W↓ᵀ,  c↑ = [z > 0]·R_z / stab(z↑)
//   negative outputs (z < 0):  z↓ = x⁺·W↓ᵀ + b↓ + x⁻·W↑ᵀ,  c↓ = [z < 0]·R_z / stab(z↓)
//   d_x = [x > 0]·(c↑·W↑ + c↓·W↓) + [x < 0]·(c↑·W↓ + c↓·W↑)
// (the bias only in the first product of each pair, as zennit's zero_bias does). b may be empty.
// x (n, d_in), w (d_out, d_in), b (d_out), d_z (n, d_out).
Matrix gamma_linear_backward(const Matrix& x, ConstMatrixView w, const RowVector& b, const Matrix& d_z, float gamma);

// dx (n, d) += LayerNorm's identity-rule backward of dy = d/dLN(x), σ a constant (LXT's
// layer_norm_forward: (x − mean)/stop_gradient(σ)); μ and σ recomputed from x.
void layer_norm_identity_add(const Matrix& x, const LayerNorm& norm, float eps, const Matrix& dy, Matrix& dx);

// d (n, d_mlp) ⊙= GELU(h)/h, the identity rule of the activation (h the pre-activation):
// Φ(h) for erf, ½(1 + tanh(…)) for tanh, σ(1.702h) for quick.
void gelu_identity_inplace(Matrix& d, const Matrix& h, Gelu kind);

// The γ defaults: the pair `vitattn eval` ranked first over a grid around LXT's ViT example's
// sweep (examples/vit_torch.py), by the gap between the negative and the positive perturbation
// AUC, then mIoU; docs/relevance.md gives the grid, the figures and how little they can say.
// γ_conv 0 is the plain gradient × input at the patch embedding.
inline constexpr float lrp_default_gamma_linear = 0.25f;
inline constexpr float lrp_default_gamma_conv = 0.0f;

struct LrpSettings {
  int class_index = 0;
  float gamma_linear = lrp_default_gamma_linear;  // γ of every linear layer
  float gamma_conv = lrp_default_gamma_conv;      // γ of the patch embedding
};

struct LrpMaps {
  Matrix pixels;   // (grid_h·P, grid_w·P) R at the input pixels, summed over the colour channels
  Matrix patches;  // (grid_h, grid_w) pixels summed over each patch
};

// AttnLRP's relevance of y_c at the input pixels, from the tape of the forward (which recorded
// the patches). Throws Error when the model has no classifier, c is not one of its classes, or a
// block has no projection (the seeded head).
LrpMaps lrp_maps(const VitModel& model, const ForwardTape& tape, const LrpSettings& settings, int grid_h, int grid_w);

}  // namespace vitattn
