#pragma once
// CLIP's text encoder (Radford et al. 2021; OpenAI clip/model.py CLIP.encode_text, which OpenCLIP
// and Hugging Face's CLIPTextTransformer compute the same way): token embedding + positional
// embedding, pre-norm residual blocks under a causal mask, ln_final, the row at the end-of-text
// token through text_projection, L2-normalised. The blocks are the image tower's EncoderBlock
// (vit.hpp): x + Attn(LN1(x)), then x + MLP(LN2(x)), nn.Linear convention y = x·Wᵀ + b.
//
// Contract, the computed length: the tokens are SOT, ids…, EOT, then padding (clip.tokenize);
// the EOT's position is the argmax of the ids (the first largest, as torch's argmax: EOT is the
// largest id of CLIP's vocabulary). Under the causal mask row i of every layer depends on tokens
// 0…i only, so positions after the EOT cannot change the EOT's row: they are not computed. The
// blocks run on the first n = EOT + 1 positions, and the attention handed out is (n, n) per
// head: exactly rows and columns 0…EOT of what the full-context computation gives.
//
// The blocks are run_block's (vit.hpp) under the tower's BlockRule (causal mask on), so the
// image tower's backward (vit_backward.hpp, block_backward) runs through them too
// (text_relevance.hpp). Many texts encode as one batch (encode_texts): their rows stacked, so
// each weight is one product for all of them, attention per text; each text's bytes are those
// of its encoding alone, whatever the batch and the thread count.
#include <cstdint>
#include <vector>

#include "layers.hpp"
#include "tensor.hpp"
#include "vit.hpp"
#include "weight_matrix.hpp"

namespace vitattn {

struct TextTower {
  int n_heads = 1;                  // H; d_head = W / H
  float eps = 1e-5f;                // LayerNorm ε
  Gelu gelu = Gelu::quick;          // the image tower's rule (QuickGELU for OpenAI CLIP)
  WeightMatrix token_embedding;     // (vocab, W) token_embedding.weight
  WeightMatrix positional_embedding;// (ctx, W) positional_embedding: one row per position of the context
  std::vector<EncoderBlock> blocks; // each with norm1, w_qkv (3·W, W), w_proj, norm2, w_fc1, w_fc2
  LayerNorm final_norm;             // (W) ln_final
  WeightMatrix w_projection;        // (E, W) text_projection, stored [W, E] by OpenAI (applied x @ P): kept transposed
  float logit_scale = 0.0f;         // log of the image-text logits' temperature: logits = exp(logit_scale)·cos

  bool present() const { return token_embedding.size() > 0; }
  int width() const { return static_cast<int>(token_embedding.cols()); }         // W
  int context() const { return static_cast<int>(positional_embedding.rows()); }  // ctx (77 for CLIP)
  int vocabulary() const { return static_cast<int>(token_embedding.rows()); }
  int d_embed() const { return static_cast<int>(w_projection.rows()); }          // E
  int n_layers() const { return static_cast<int>(blocks.size()); }

  // Throws Error naming `source` and the first tensor whose shape does not fit the others.
  void validate(const std::string& source) const;
  // Its blocks' rule for run_block and block_backward: its heads, ε and activation, the
  // scores scaled by 1/√d_head, the causal mask on.
  BlockRule block_rule() const;
};

struct TextResult {
  RowVector embedding;  // (E) the EOT row of ln_final's output through the projection, L2-normalised
  int length = 0;       // n = EOT + 1, the positions computed
  std::vector<std::vector<Matrix>> attention;  // [layer][head] (n, n), when asked for; else empty
};

// ids: `context()` token ids (clip.tokenize's row). Throws Error when their count is not the
// context, an id is outside the vocabulary, or the activations become non-finite.
// `tape`, when given, receives what a backward pass reads (vit.hpp's ForwardTape over the n
// computed positions: each block's tape, and x_out, the last block's output before ln_final).
TextResult encode_text(const TextTower& tower, const std::vector<std::int32_t>& ids, bool keep_attention = false,
                       ForwardTape* tape = nullptr);

// Each row of `texts` as encode_text encodes it alone, with the same bytes, one result each in
// their order; the texts' rows go through each linear layer together (one product per weight).
// Throws encode_text's Errors (for the first text that has one) and computes nothing then.
std::vector<TextResult> encode_texts(const TextTower& tower, const std::vector<std::vector<std::int32_t>>& texts,
                                     bool keep_attention = false);

// The position of the end-of-text token: the first largest id (torch's text.argmax(-1)).
int end_of_text_position(const std::vector<std::int32_t>& ids);

}  // namespace vitattn
