#pragma once
// Zero-shot classes: a text tower's embeddings of the class prompts used as the rows of a
// classifier of the image embedding (Radford et al. 2021, CLIP; Zhai et al. 2023, SigLIP).
// With e the L2-normalised image embedding (vit_head.hpp image_embedding) and t_c the
// L2-normalised embedding of class c's prompt (or the normalised mean of its prompt ensemble):
//
//   y_c = exp(logit_scale) · t_c·e + logit_bias      (CLIP: logit_bias = 0)
//
// which is CLIP's logits_per_image and SigLIP's logits_per_image (HF SiglipModel.forward).
// CLIP turns them into probabilities with a softmax over the classes, SigLIP with a sigmoid
// of each: the head says which (classify.hpp ClassProbability).
//
// Set as VitModel::zero_shot, the head is the model's classifier (VitModel::has_classifier):
// every class-specific map, the top classes and the faithfulness scores then read y_c, so a
// text prompt is a class like any other.
#include "classify.hpp"
#include "tensor.hpp"

namespace vitattn {

struct ZeroShotHead {
  Matrix classes;            // (n_classes, d_embed) one L2-normalised text embedding per class
  float logit_scale = 0.0f;  // log of the temperature
  float logit_bias = 0.0f;   // SigLIP's; 0 for CLIP
  ClassProbability probability = ClassProbability::softmax;
  // SigLIP's LeGrad "empty prompt" correction (legrad_text.hpp): the L2-normalised embedding of
  // the text "a photo of a" and the threshold; an empty embedding: no correction.
  RowVector legrad_empty_prompt;
  float legrad_empty_threshold = 0.8f;

  bool present() const { return classes.size() > 0; }
  int n_classes() const { return static_cast<int>(classes.rows()); }
  int d_embed() const { return static_cast<int>(classes.cols()); }
};

// e (d_embed), L2-normalised → y (n_classes): exp(logit_scale)·classes·e + logit_bias.
RowVector zero_shot_logits(const ZeroShotHead& head, const RowVector& embedding);

// ∂y_c/∂u (d_embed) for the embedding before its normalisation, u (e = u/‖u‖):
// exp(logit_scale)·(t_c − (t_c·e)·e)/‖u‖. A zero u has no direction: its gradient is zero.
RowVector zero_shot_gradient(const ZeroShotHead& head, const RowVector& unnormalized, int class_index);

}  // namespace vitattn
