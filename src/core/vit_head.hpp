#pragma once
// What sits after the last block: how the final tokens are pooled into one row, the classifier
// that reads it, and the projection into a joint image-text embedding. Each family's own
// reading of its tokens (VitModel::pooling):
//   class_token           timm/DeiT/DINO/DINOv2/HF ViT/torchvision: head(tokens[0])
//   class_and_dist        timm's VisionTransformerDistilled in eval mode: (head(t[0]) + head_dist(t[1])) / 2
//   patch_mean            timm global_pool='avg': head(fc_norm(mean of the patch tokens))
//   class_and_patch_mean  HF Dinov2ForImageClassification: head([t[0], mean of the patch tokens])
//   probe                 HF SiglipMultiheadAttentionPoolingHead: a learned query attends over every
//                         final token; its output (after a residual MLP) is the pooled row
// The patch tokens are those from first_patch_token() on: registers are pooled by no family.
// The image embedding (CLIP): w_embed · (pooled row), L2-normalised as every CLIP library does
// before its similarity product.
#include <string>
#include <vector>

#include "tensor.hpp"
#include "vit.hpp"

namespace vitattn {

// tokens (n_tokens, d_model) after the final norm → the classifier's input (d_pool) for the
// pooling's main head (the class token's row for class_and_dist).
RowVector pooled_features(const VitModel& model, const Matrix& tokens);

// tokens (n_tokens, d_model) → logits (n_classes): the zero-shot texts' of the image embedding
// when the model has them (zero_shot.hpp), else w_head's. The model has a classifier.
RowVector classifier_logits(const VitModel& model, const Matrix& tokens);

// pooled (d_model) → w_embed · pooled (d_embed), or the pooled row itself without w_embed
// (SigLIP's probe): the image embedding before its normalisation.
RowVector unnormalized_embedding(const VitModel& model, const RowVector& pooled);

// tokens (n_tokens, d_model) → the image embedding, L2-normalised (d_embed). The model
// has one (VitModel::has_image_embedding).
RowVector image_embedding(const VitModel& model, const Matrix& tokens);

// E of image_embedding: w_embed's rows, d_model for probe pooling, 0 when the model has none.
Eigen::Index image_embedding_width(const VitModel& model);

// Pooling::probe, as HF SiglipMultiheadAttentionPoolingHead.forward: q = probe·W_Qᵀ + b_Q,
// K, V from the tokens; per head h (the encoder's H, d_head = d_model / H) softmax(q_h·K_hᵀ/√d_head);
// concat(heads)·W_outᵀ + b_out = y; pooled = y + fc2(GELU(fc1(LayerNorm(y)))).
struct ProbePooling {
  RowVector pooled;                // (d_model)
  std::vector<Matrix> attention;   // [head] (1, n_tokens) the probe's probabilities over the tokens
};
// What the probe's backward (probe_backward.hpp) reads of its forward besides the attention.
struct ProbeTape {
  Matrix q;         // (1, d_model) the probe's query, every head side by side
  Matrix k, v;      // (n_tokens, d_model) the tokens' keys and values
  Matrix y;         // (1, d_model) out_proj's output, before the residual MLP
  Matrix pre_gelu;  // (1, d_mlp) fc1's output, before the GELU
};
// tokens (n_tokens, d_model) after the final norm (SigLIP's post_layernorm). The model has a
// probe head. `tape`, when given, is filled for a backward.
ProbePooling probe_pooling(const VitModel& model, const Matrix& tokens, ProbeTape* tape = nullptr);

// v / ‖v‖₂ (a zero vector stays zero), the norm in double.
RowVector l2_normalized(const RowVector& v);

// Why a model has no classifier, for a refusal: "" in general; a SigLIP tower's (Pooling::probe)
// and a CLIP tower's (a projection to a joint embedding, or CLIP's norm before the first block):
// their zero-shot classes are texts, through their text tower (zero_shot.hpp), which a front end
// asks for.
std::string no_classifier_reason(const VitModel& model);
// The same as a clause to append to a sentence: "; " + the reason, or "" when there is none.
std::string no_classifier_note(const VitModel& model);

// The head's tensors against the pooling and d_model (VitModel::validate calls it); Error
// naming `source` and the tensor. `values`: also every value finite.
void validate_head(const VitModel& model, const std::string& source, bool values);

}  // namespace vitattn
