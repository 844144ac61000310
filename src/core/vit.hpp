#pragma once
// A Vision Transformer encoder (ViT, DeiT, DINO, DINOv2): patch embedding, class token,
// optional register tokens, position embeddings, pre-norm blocks, final norm, optional
// classifier. PyTorch nn.Linear convention throughout: y = x·Wᵀ + b, W is (out, in).
// The matrices are WeightMatrix (weight_matrix.hpp): a checkpoint's float32 values read in
// place from its file where they can be, else owned. The vectors (biases, norms, tokens, layer
// scales: about 0.2% of a ViT-B/16's bytes) are copies of their own.
// The seeded head is the same type: one block, attention only (no norm, no projection, no
// MLP), with its own head width d_k (seeded_model.hpp).
#include <functional>
#include <string>
#include <vector>

#include "image_tensor.hpp"
#include "layers.hpp"
#include "pos_embed.hpp"
#include "rope.hpp"
#include "tensor.hpp"
#include "weight_matrix.hpp"
#include "zero_shot.hpp"

namespace vitattn {

// d_attn = H·d_head, the heads' outputs side by side: d_model in every standard ViT, but
// the seeded head's d_k is its own.
struct EncoderBlock {
  LayerNorm norm1;     // absent: attention reads x itself
  WeightMatrix w_qkv;  // (3·d_attn, d_model): rows [W_Q; W_K; W_V]; head h uses rows h·d_head … within each
  RowVector b_qkv;     // (3·d_attn), empty when the model has no qkv bias
  WeightMatrix w_proj; // (d_model, d_attn) attention output projection; empty: the block's output is the
                       // heads' outputs themselves (n_tokens, d_attn), no residual (the last block only)
  RowVector b_proj;    // (d_model)
  RowVector ls1;       // (d_model) layer scale of the attention branch; empty when absent
  LayerNorm norm2;     // absent together with the MLP
  WeightMatrix w_fc1;  // (d_mlp, d_model); empty: no MLP
  RowVector b_fc1;     // (d_mlp)
  WeightMatrix w_fc2;  // (d_model, d_mlp)
  RowVector b_fc2;     // (d_model)
  RowVector ls2;       // (d_model) layer scale of the MLP branch; empty when absent

  bool projected() const { return w_proj.size() > 0; }
  bool has_mlp() const { return w_fc1.size() > 0; }
};

// What the classifier (and the image embedding) read of the final tokens (vit_head.hpp).
enum class Pooling {
  class_token,           // the class token's row (ViT, DeiT, DINO, DINOv2, CLIP)
  class_and_dist,        // distilled DeiT: the class token through w_head and the distillation token
                         // through w_head_dist, the two logits averaged (timm's eval-mode output)
  patch_mean,            // the mean of the patch tokens, then fc_norm (timm's global_pool='avg')
  class_and_patch_mean,  // [class token, mean of the patch tokens], 2·d_model wide (HF Dinov2ForImageClassification)
  probe,                 // SigLIP: a learned probe attends to every final token (VitModel::probe_head)
};

// SigLIP's multi-head attention pooling (HF SiglipMultiheadAttentionPoolingHead): one learned
// query, the probe, attends over the final tokens with the encoder's head count; its output
// passes a residual MLP after a LayerNorm. The pooled row is SigLIP's image embedding.
struct ProbeHead {
  RowVector probe;       // (d_model) the query; empty: no probe head
  WeightMatrix w_qkv;    // (3·d_model, d_model) nn.MultiheadAttention's in_proj_weight, rows [W_Q; W_K; W_V]
  RowVector b_qkv;       // (3·d_model)
  WeightMatrix w_out;    // (d_model, d_model) out_proj
  RowVector b_out;       // (d_model)
  LayerNorm norm;        // (d_model) before the MLP
  WeightMatrix w_fc1;    // (d_mlp, d_model)
  RowVector b_fc1;       // (d_mlp)
  WeightMatrix w_fc2;    // (d_model, d_mlp)
  RowVector b_fc2;       // (d_model)
  bool present() const { return probe.size() > 0; }
};

struct VitModel {
  int patch_size = 16;          // P
  int n_heads = 1;              // H; d_head = d_attn / H
  float eps = 1e-6f;            // LayerNorm ε
  Gelu gelu = Gelu::erf;
  WeightMatrix w_patch;         // (d_model, 3·P·P): Conv2d(3, d_model, P, stride P) weight, flattened (c, y, x)
  RowVector b_patch;            // (d_model)
  RowVector cls_token;          // (d_model)
  RowVector dist_token;         // (d_model) distilled DeiT's distillation token, token 1; empty: none
  WeightMatrix register_tokens; // (n_registers, d_model), after the class (and distillation) token
  WeightMatrix pos_embed;       // (pos_prefix + grid_h·grid_w, d_model)
  int pos_prefix = 1;           // leading rows for the leading tokens: 0, 1 (class), 1 + has_dist, or all of them
  int grid_h = 0, grid_w = 0;   // the patch grid pos_embed was trained for
  PosInterp pos_interp = PosInterp::bicubic;  // how the checkpoint's own library resamples them
  Rope rope;                    // DINOv3: rotary positions on the patches' q and k (rope.hpp), instead of a
                                // table: pos_embed is empty, pos_prefix 0, and grid_h × grid_w is only the
                                // default input (any grid works without resampling)
  LayerNorm norm_pre;           // after the embedding, before the first block (CLIP's ln_pre); absent in most
  std::vector<EncoderBlock> blocks;
  LayerNorm final_norm;         // absent in some models (the classifier reads the raw state)
  Pooling pooling = Pooling::class_token;
  LayerNorm fc_norm;            // (d_model) after Pooling::patch_mean (timm's fc_norm); absent elsewhere
  WeightMatrix w_head;          // (n_classes, d_pool): d_pool = 2·d_model for class_and_patch_mean, else d_model;
                                // empty when there is no classifier
  RowVector b_head;             // (n_classes)
  WeightMatrix w_head_dist;     // (n_classes, d_model) distilled DeiT's distillation head; empty: none
  RowVector b_head_dist;        // (n_classes)
  ProbeHead probe_head;         // Pooling::probe's weights; absent elsewhere
  WeightMatrix w_embed;         // (d_embed, d_model) projection of the pooled token to a joint image-text
                                // space (CLIP's visual.proj, transposed; HF visual_projection); empty: none
  ZeroShotHead zero_shot;       // texts as classes (zero_shot.hpp), set by a caller that encoded them; when
                                // present it is the classifier, in place of w_head
  Normalization norm;           // image normalisation the model was trained with
  // Set by a loader whose weights are read in place from something that can vanish under the
  // run (a file cut short by another program): "" while they are intact, else why not, naming
  // the file. Empty: they cannot be lost. See check_weights().
  std::function<std::string()> weights_lost;

  int d_model() const { return static_cast<int>(w_patch.rows()); }
  // d_attn = H·d_head from the first block's qkv rows (3·d_attn); every block has the same.
  int d_attn() const { return blocks.empty() ? d_model() : static_cast<int>(blocks.front().w_qkv.rows() / 3); }
  int d_head() const { return d_attn() / n_heads; }
  int n_layers() const { return static_cast<int>(blocks.size()); }
  int n_registers() const { return static_cast<int>(register_tokens.rows()); }
  bool has_class_token() const { return cls_token.size() > 0; }  // SigLIP has none
  bool has_dist() const { return dist_token.size() > 0; }
  // A classifier: zero-shot texts, whose rows are then the classes, else w_head's rows.
  // Without one there are no logits, no class-specific maps, no top classes.
  bool has_classifier() const { return zero_shot.present() || has_linear_head(); }
  bool has_linear_head() const { return w_head.size() > 0; }  // w_head's rows, whatever zero_shot says
  int n_classes() const { return zero_shot.present() ? zero_shot.n_classes() : static_cast<int>(w_head.rows()); }
  // How the logits become probabilities: the texts' rule (SigLIP's sigmoid), else a softmax.
  ClassProbability class_probability() const {
    return zero_shot.present() ? zero_shot.probability : ClassProbability::softmax;
  }
  // An image embedding (vit_head.hpp): CLIP's projection, or SigLIP's probe pooling itself.
  bool has_image_embedding() const { return w_embed.size() > 0 || pooling == Pooling::probe; }
  // [cls?, dist?, registers…, patches…]
  int first_patch_token() const { return (has_class_token() ? 1 : 0) + (has_dist() ? 1 : 0) + n_registers(); }

  // Throws Error naming `source` and the first tensor whose shape does not fit the others,
  // or that holds a non-finite value. CheckValues::no leaves out the values (a pass over every
  // weight, as long as reading them): for a caller that checked each tensor as it read it.
  enum class CheckValues : bool { no = false, yes = true };
  void validate(const std::string& source, CheckValues values = CheckValues::yes) const;
  void validate_rope(const std::string& source) const;  // validate's part for a RoPE model

  // Throws Error with weights_lost()'s message when it has one. forward() and query_key() call
  // it after reading the weights, so nothing computed from lost values is ever shown.
  void check_weights() const;
};

// What a forward keeps of one block for a backward pass (vit_backward.hpp): the activations
// the gradients read that cannot be had cheaply again. The LayerNorm outputs are not kept:
// the backward recomputes them from x and x_mid (one pass over a row each).
struct BlockTape {
  Matrix x;                      // (n_tokens, d_model) the block's input
  Matrix qkv;                    // (n_tokens, 3·d_attn) [q | k | v]
  std::vector<Matrix> attention; // [head] (n_tokens, n_tokens) the probabilities A
  Matrix heads;                  // (n_tokens, d_attn) A·v of every head, before the projection
  Matrix x_mid;                  // (n_tokens, d_model) after the attention branch; empty without a projection
  Matrix pre_gelu;               // (n_tokens, d_mlp) fc1's output, before the GELU; empty without an MLP
};

// Every block's tape and the stream after the last block (before the final norm). About
// n_layers × (2·d_model + 3·d_attn + d_attn + d_mlp + H·n_tokens) floats per token: 95 MB for a ViT-B/16 at 224².
struct ForwardTape {
  std::vector<BlockTape> blocks;  // [layer]
  Matrix x_out;                   // (n_tokens, d_model) the last block's output
  Matrix patches;                 // (n_patches, 3·P·P) the image's patches (patchify), what the patch embedding read
  Matrix embedded;                // (n_tokens, d_model) the tokens before norm_pre; empty without norm_pre
};

// What a block's computation reads besides its weights: the image tower fills it from its
// VitModel (block_rule), a text tower from its own fields, so one block implementation
// (run_block) and one backward (vit_backward.hpp, block_backward) serve every tower.
struct BlockRule {
  int n_heads = 1;          // H; d_head = d_attn / H, d_attn from the block's qkv rows (3·d_attn)
  float eps = 1e-6f;        // LayerNorm ε
  Gelu gelu = Gelu::erf;
  bool scale = true;        // scores × 1/√d_head
  bool causal = false;      // token i attends to tokens 0…i only (CLIP's text tower: build_attention_mask)
  bool rotary = false;      // q and k of the rows from first_rotated on are rotated (RoPE, DINOv3) by
  int first_rotated = 0;    // BlockBuffers::rope, the input's table
};

// The image tower's rule: the model's heads, ε and activation, no mask, RoPE when it has it.
BlockRule block_rule(const VitModel& model, bool scale);

// Rows [begin, begin + length) of a block's input that attend among themselves (one text of a
// batch: core/text_tower.hpp's encode_texts); every other row is invisible to them.
struct Sequence {
  Eigen::Index begin = 0, length = 0;
};

// The input's layout and the intermediate matrices of one block. A forward allocates them once
// and every block reuses them, so the blocks run without heap traffic.
struct BlockBuffers {
  std::vector<Sequence> sequences;  // the input's independent sequences; empty: all rows are one
  RopeTable rope;  // this image's rotation of the patches' q and k (rope.hpp); empty without RoPE
  Matrix xn;      // (n_tokens, d_model) LN1(x), then LN2(x)
  Matrix qkv;     // (n_tokens, 3·d_attn) [q | k | v], head h in columns h·d_head … of each
  std::vector<Matrix> scores;  // [sequence·H + head] (length, length) its scores, then its probabilities (when not kept)
  Matrix heads;   // (n_tokens, d_attn) the heads' outputs side by side, before the projection
  Matrix hidden;  // (n_tokens, d_mlp) the MLP's hidden layer
  Matrix branch;  // (n_tokens, d_model) a branch's output, only when layer scale needs it apart
};

// x (n_tokens, d_model) ← x + Attn(LN1(x)), then x + MLP(LN2(x)), in place; a part the block
// lacks is left out (no norm: attention reads x; no MLP: the block ends after attention).
// Without a projection, x ← the heads' outputs (n_tokens, d_attn).
// Each sequence's heads' probabilities (length, length) are appended to `attention` when it is
// given, sequence by sequence, head by head. attention_only: stop once they are known (x is
// left as it was). `record`, when given, receives what a backward pass reads (its attention is
// `attention`); a recorded input is one sequence.
// A row's bytes depend on its own sequence only, never on the rows around it, when each
// sequence starts at a multiple of 16 floats of x (text_tower.cpp's batches are laid out so):
// the products are per-element chains (gemm.hpp), the norms and the activation row by row.
void run_block(const BlockRule& rule, const EncoderBlock& block, Matrix& x, BlockBuffers& buf,
               std::vector<Matrix>* attention, bool attention_only = false, BlockTape* record = nullptr);

struct ForwardOptions {
  int last_layer = -1;          // stop after this block's attention (−1: run every block, norm and head)
  int keep_from_layer = -1;     // keep attention of layers keep_from_layer … last (−1: only the last one run)
  bool scale = true;            // 1/√d_head
  // When set, each kept layer's heads are handed here as soon as they are known, instead of
  // being kept in ForwardResult::attention (rollout needs one layer at a time, not all).
  std::function<void(int layer, const std::vector<Matrix>& heads)> on_attention;
  // When set, told the residual stream x (n_tokens, d_model) after each block that runs whole
  // (every block when last_layer is −1), for the token diagnostics (token_diagnostics.hpp);
  // the seeded head's unprojected last block hands its heads' outputs (n_tokens, d_attn).
  std::function<void(int layer, const Matrix& x)> on_block_output;
  // When given, filled with what a backward pass needs (every block runs: last_layer is ignored).
  ForwardTape* tape = nullptr;
};

struct ForwardResult {
  int first_kept_layer = 0;
  std::vector<std::vector<Matrix>> attention;  // [layer − first_kept_layer][head] (n_tokens, n_tokens)
  Matrix tokens;     // (n_tokens, d_model) after the final norm, (n_tokens, d_attn) when the last block
                     // is not projected; only when every block ran
  RowVector logits;  // (n_classes); only when every block ran and the model has a classifier
  RowVector embedding;  // (d_embed) the image embedding, L2-normalised; only when every block ran and the
                        // model has one (vit_head.hpp)
  std::vector<Matrix> probe_attention;  // [head] (1, n_tokens) Pooling::probe's attention over the final
                                        // tokens; only when every block ran
};

// image (3, grid_h·P, grid_w·P) → x (n_tokens, d_model) = [cls; dist; registers; W_E·p + b_E] + positions,
// with the position embeddings resampled when the grid differs from the trained one (none with
// RoPE: its positions enter in the attention), then norm_pre when the model has one.
Matrix embed_image(const VitModel& model, const ImageTensor& image);
// The same from the image's patches (n_patches, 3·P·P) on a grid_h × grid_w grid; `before_norm`,
// when given, receives the tokens before norm_pre (left empty without one).
Matrix embed_patches(const VitModel& model, const Matrix& patches, int grid_h, int grid_w, Matrix* before_norm = nullptr);

ForwardResult forward(const VitModel& model, const ImageTensor& image, const ForwardOptions& options = {});

}  // namespace vitattn
