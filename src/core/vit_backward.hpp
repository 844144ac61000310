#pragma once
// Reverse-mode gradients through the encoder of vit.hpp, of one scalar target: the logit y_c
// of class c, read from the pooled tokens (vit_head.hpp) of the stream after some block through the final
// norm and the classifier (after the last block: the model's own logit; after an earlier one:
// LeGrad's per-layer logit).
//
// Only the activations' gradients are computed, never the weights' (nothing here trains): per
// block one product for each product of the forward, and two more for the attention (∂A and
// ∂v, then ∂q and ∂k), so a backward costs about as much as the forward that recorded it.
// What it reads is the forward's tape (vit.hpp, ForwardTape): kept, not recomputed, except the
// LayerNorm outputs, which are one row pass each.
//
// Written like the forward: small steps in data-flow order (backwards), a shape comment beside
// every product, buffers allocated once per backward and reused by every block, the products on
// the project's own GEMM and the heads handed to threads whole, so the gradients have the same
// bytes whatever the thread count (gemm.hpp).
//
// Conventions: d_X is ∂target/∂X, of X's shape. The seeded head (one attention-only block, no
// classifier) has no logit; block_backward still runs on it for a target given as ∂/∂output.
#include <functional>
#include <vector>

#include "probe_backward.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

// What one block's backward gives.
struct BlockGradients {
  std::vector<Matrix> d_attention;  // [head] (n_tokens, n_tokens) ∂target/∂A, A the probabilities
  Matrix d_norm1;                   // (n_tokens, d_model) ∂target/∂LN1(x); ∂target/∂x itself without norm1
  Matrix d_input;                   // (n_tokens, d_model) ∂target/∂x, x the block's input
};

// The intermediate gradients of one block, allocated once and reused by every block.
struct BackwardBuffers {
  Matrix d_stream;   // (n_tokens, d_model) ∂/∂x_mid, the stream between the two branches
  Matrix d_branch;   // (n_tokens, d_model) a branch output's gradient times its layer scale
  Matrix d_hidden;   // (n_tokens, d_mlp) ∂/∂GELU(h), then ∂/∂h
  Matrix d_xn;       // (n_tokens, d_model) ∂/∂LN2(x_mid)
  Matrix d_heads;    // (n_tokens, d_attn) ∂/∂(the heads' outputs)
  Matrix d_qkv;      // (n_tokens, 3·d_attn) [∂q | ∂k | ∂v]
  std::vector<Matrix> d_scores;    // [head] (n_tokens, n_tokens) ∂S, S the scores before the softmax
  std::vector<Matrix> transposed;  // [head] (n_tokens, n_tokens) Aᵀ, then ∂Sᵀ
};

// ∂target/∂x (n_tokens, d_model) for the stream x after a block, the target a function of the
// pooled row p = pooled_features(LN_f(x)) (vit_head.hpp) given by d_pooled = ∂target/∂p (d_pool:
// 2·d_model for class_and_patch_mean, else d_model): back through the pooling, i.e. the class
// token's row (class_token, and class_and_dist's main row); the patch rows, 1/n each, through
// fc_norm (patch_mean); the class row and the patch rows with d_pooled's two halves
// (class_and_patch_mean); every token through the probe (probe: probe_backward.hpp), whose
// attention and its gradients go to `probe` when it is given. Then back through the final norm.
// Registers stay zero. For a head on the pooled row that the caller differentiates itself (a
// zero-shot head's cosine).
Matrix pooled_row_backward(const VitModel& model, const Matrix& x, const RowVector& d_pooled,
                           ProbeGradients* probe = nullptr);

// ∂y_c/∂x (n_tokens, d_model) for the stream x after a block: y_c the classifier's logit,
// w_head[c]·p + b (pooled_row_backward with d_pooled = w_head[c]); distilled: ½ of that plus ½
// w_head_dist[c] at the distillation token's row; `probe` as pooled_row_backward's. Throws
// Error when the model has no classifier or c is not one of its classes.
Matrix logit_gradient(const VitModel& model, const Matrix& x, int class_index, ProbeGradients* probe = nullptr);

// d_output (n_tokens, d_model) = ∂target/∂(the block's output) → that block's gradients, for
// a block run by run_block under `rule` (vit.hpp: the image tower's block_rule, or a text
// tower's) whose tape is `tape` (one sequence). Under a causal rule A is 0 above the diagonal, so
// ∂S is too (the softmax's backward multiplies by A); ∂A is handed out whole, as torch's
// gradient of the probabilities is. Throws Error for a rotary rule (RoPE).
void block_backward(const BlockRule& rule, const EncoderBlock& block, const BlockTape& tape, const Matrix& d_output,
                    BlockGradients& out, BackwardBuffers& buf);

// The model's own logit y_c, back through every block from the last to the first. Each
// block's gradients are handed to on_block as soon as they are known (layer L−1 first) and
// reused for the next, so memory holds one block's, not all. Returns ∂y_c/∂x_0
// (n_tokens, d_model), the embedded tokens.
Matrix encoder_backward(const VitModel& model, const ForwardTape& tape, int class_index, bool scale,
                        const std::function<void(int layer, const BlockGradients&)>& on_block);

// The layers' backward steps, shared with the probe's (probe_backward.hpp) and the text tower's
// head (text_relevance.hpp).
// dx (n_tokens, d) += the LayerNorm's backward of dy = ∂/∂LN(x), row by row (torch's
// native_layer_norm_backward, biased variance; μ and σ recomputed from x).
void layer_norm_backward_add(const Matrix& x, const LayerNorm& norm, float eps, const Matrix& dy, Matrix& dx);
// d (n_tokens, d_mlp) ⊙= GELU'(h), h the pre-activation, in place.
void gelu_backward_inplace(Matrix& d, const Matrix& h, Gelu kind);
// ∂/∂(scores) of a row-wise softmax, from its output A and ∂A.
void softmax_backward(const Matrix& a, const Matrix& d_a, Matrix& d_s);

// LN(x) (n_tokens, d_model) of a block's input, as the forward computed it (what Grad-CAM reads
// at norm1); x itself when the block has no norm1.
Matrix norm1_output(const VitModel& model, int layer, const BlockTape& tape);

}  // namespace vitattn
