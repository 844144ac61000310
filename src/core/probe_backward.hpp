#pragma once
// The backward of SigLIP's attention-pooling head (Pooling::probe, vit_head.hpp): from a target's
// gradient at the pooled row to its gradients at the tokens the probe reads and at the probe's
// attention. The probe's forward is run again with its tape (one query: a small part of a
// block's cost), so a caller needs only the tokens.
//
// The forward (HF SiglipMultiheadAttentionPoolingHead.forward): q = probe·W_Qᵀ + b_Q (a constant:
// it reads no token), K, V = tokens·W_Kᵀ + b_K, tokens·W_Vᵀ + b_V; per head a_h = softmax(s·q_h·K_hᵀ),
// o_h = a_h·V_h; y = [o_0 … o_H−1]·W_outᵀ + b_out; pooled = y + fc2(GELU(fc1(LN(y)))). The backward
// goes through the residual MLP with its LayerNorm, out_proj, each head's softmax, K and V.
// Only the activations' gradients, never the weights'.
#include <vector>

#include "tensor.hpp"
#include "vit.hpp"
#include "vit_head.hpp"

namespace vitattn {

struct ProbeGradients {
  Matrix d_tokens;                  // (n_tokens, d_model) ∂target/∂tokens
  std::vector<Matrix> d_attention;  // [head] (1, n_tokens) ∂target/∂a_h, a_h the probe's probabilities
  std::vector<Matrix> attention;    // [head] (1, n_tokens) a_h itself, the forward's
};

// tokens (n_tokens, d_model), what the probe reads (after the final norm in the model's own
// forward), and d_pooled (d_model) = ∂target/∂pooled → the gradients above. Throws Error when
// the model has no probe head or the sizes do not fit.
ProbeGradients probe_backward(const VitModel& model, const Matrix& tokens, const RowVector& d_pooled);

// The same from a forward already run with its tape (probe_pooling(model, tokens, &tape)): for
// a caller whose d_pooled depends on the pooled row, or who takes several targets' gradients.
ProbeGradients probe_backward(const VitModel& model, const ProbePooling& forward, const ProbeTape& tape,
                              const RowVector& d_pooled);

}  // namespace vitattn
