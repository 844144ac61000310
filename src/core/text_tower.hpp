#pragma once
// The text encoders of the image-text models: CLIP's (Radford et al. 2021; OpenAI clip/model.py
// CLIP.encode_text, which OpenCLIP and Hugging Face's CLIPTextTransformer compute the same way)
// and SigLIP's (HF modeling_siglip.py SiglipTextTransformer, SigLIP 2's the same). Both: token
// embedding + positional embedding, pre-norm residual blocks, the final norm, one row through
// the projection, L2-normalised. The blocks are the image tower's EncoderBlock (vit.hpp):
// x + Attn(LN1(x)), then x + MLP(LN2(x)), nn.Linear convention y = x·Wᵀ + b.
//
// Where they differ, each a field of TextTower read by one function below:
//               mask (TextMask)   pooled row (TextPooling)         head bias  logit_bias  probabilities
//   CLIP        causal            the end-of-text token (argmax)   none       none        softmax over the texts
//   SigLIP      none              the last position (ctx − 1)      yes        yes         sigmoid of each logit
//
// Contract, the computed length: under the causal mask row i of every layer depends on tokens
// 0…i only, so positions after the pooled one cannot change its row: they are not computed.
// CLIP's tokens are SOT, ids…, EOT, then padding (clip.tokenize); the EOT's position is the
// argmax of the ids (the first largest, as torch's argmax: EOT is the largest id of CLIP's
// vocabulary). The blocks run on the first n = EOT + 1 positions, and the attention handed out
// is (n, n) per head: exactly rows and columns 0…EOT of what the full-context computation
// gives. Without a mask (SigLIP) every position reaches every other: n = ctx, all computed.
//
// The blocks are run_block's (vit.hpp) under the tower's BlockRule (its mask), so the image
// tower's backward (vit_backward.hpp, block_backward) runs through them too (text_relevance.hpp).
// Many texts encode as one batch (encode_texts): their rows stacked, so each weight is one
// product for all of them, attention per text; each text's bytes are those of its encoding
// alone, whatever the batch and the thread count.
#include <cstdint>
#include <utility>
#include <vector>

#include "classify.hpp"
#include "layers.hpp"
#include "tensor.hpp"
#include "vit.hpp"
#include "weight_matrix.hpp"

namespace vitattn {

enum class TextMask { causal, none };                // CLIP's build_attention_mask; SigLIP's encoder has none
enum class TextPooling { end_of_text, last };        // text.argmax(-1)'s row (CLIP); last_hidden_state[:, -1] (SigLIP)

struct TextTower {
  int n_heads = 1;                  // H; d_head = W / H
  float eps = 1e-5f;                // LayerNorm ε
  Gelu gelu = Gelu::quick;          // the image tower's rule (QuickGELU for OpenAI CLIP)
  WeightMatrix token_embedding;     // (vocab, W) token_embedding.weight
  WeightMatrix positional_embedding;// (ctx, W) positional_embedding: one row per position of the context
  std::vector<EncoderBlock> blocks; // each with norm1, w_qkv (3·W, W), w_proj, norm2, w_fc1, w_fc2
  LayerNorm final_norm;             // (W) ln_final
  WeightMatrix w_projection;        // (E, W) text_projection, stored [W, E] by OpenAI (applied x @ P): kept transposed;
                                    // SigLIP's text_model.head.weight
  RowVector b_projection;           // (E) SigLIP's text_model.head.bias; empty: none (CLIP)
  float logit_scale = 0.0f;         // log of the image-text logits' temperature: logits = exp(logit_scale)·cos + logit_bias
  float logit_bias = 0.0f;          // SigLIP's; 0 for CLIP, which has none
  TextMask mask = TextMask::causal;
  TextPooling pooling = TextPooling::end_of_text;
  ClassProbability probabilities = ClassProbability::softmax;

  bool present() const { return token_embedding.size() > 0; }
  int width() const { return static_cast<int>(token_embedding.cols()); }         // W
  int context() const { return static_cast<int>(positional_embedding.rows()); }  // ctx (77 for CLIP)
  int vocabulary() const { return static_cast<int>(token_embedding.rows()); }
  int d_embed() const { return static_cast<int>(w_projection.rows()); }          // E
  int n_layers() const { return static_cast<int>(blocks.size()); }
  // Its blocks' rule for run_block and block_backward: its heads, ε and activation, the
  // scores scaled by 1/√d_head, the mask as `mask` says.
  BlockRule block_rule() const;

  // Throws Error naming `source` and the first tensor whose shape does not fit the others.
  void validate(const std::string& source) const;
};

struct TextResult {
  RowVector embedding;  // (E) the pooled row of the final norm's output through the projection, L2-normalised
  int length = 0;       // n, the positions computed: EOT + 1 under the causal mask, else the context
  std::vector<std::vector<Matrix>> attention;  // [layer][head] (n, n), when asked for; else empty
};

// ids: `context()` token ids (clip.tokenize's row, SigLIP's processor's padded row). Throws
// Error when their count is not the context, an id is outside the vocabulary, or the
// activations become non-finite.
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

// The position whose row is the text's embedding: the end-of-text token's (CLIP), the last (SigLIP).
int pooled_position(const TextTower& tower, const std::vector<std::int32_t>& ids);

// The positions of the prompt's own tokens [begin, end): CLIP's between the start-of-text and
// the end-of-text token (1 … EOT − 1); SigLIP's before its first "</s>" (the id its padded row
// ends with: the processor appends it, then pads with it).
std::pair<int, int> word_span(const TextTower& tower, const std::vector<std::int32_t>& ids);

// How many positions encode_text computes: up to the pooled one under the causal mask, else all.
int computed_length(const TextTower& tower, const std::vector<std::int32_t>& ids);

// images (N, E) and texts (n, E), both L2-normalised → logits (N, n) = exp(logit_scale)·cos +
// logit_bias: CLIP's logits_per_image, SigLIP's logits_per_text transposed.
Matrix image_text_logits(const TextTower& tower, const Matrix& images, const Matrix& texts);

// logits (N, n) → probabilities (N, n) by the tower's rule: each row a softmax over the texts
// (CLIP's logits_per_image.softmax(-1)), or each value's sigmoid (SigLIP's torch.sigmoid(logits)).
Matrix image_text_probabilities(const TextTower& tower, const Matrix& logits);

}  // namespace vitattn
