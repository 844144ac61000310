#pragma once
// `vitattn forward` as a pipeline step: a model's encoder on preprocessed tensors (.npy of
// [3, H, W] or [N, 3, H, W]), every layer's attention, the class token's features and the
// logits written as .npy, for checking against other implementations (PyTorch, the model's
// original code) on exactly the same input. No CLI, no logging: results come back as data.
//
// For each input x.npy, in the output folder:
//   x_attention.npy  [N, layers, heads, T, T]
//   x_features.npy   [N, width]   the class token's row after the last block
//   x_tokens.npy     [N, T, width]  every token after the final norm (ForwardResult::tokens;
//                                   its row 0 is x_features)
//   x_norms.npy      [N, layers, T] the L2 norm of every token of the residual stream after
//                                   each block, before the final norm (token_diagnostics.hpp's
//                                   token_norms: what the artifact rule and the report read)
//   x_logits.npy     [N, classes] only when the model has a classifier
//   x_embedding.npy  [N, d_embed] the L2-normalised image embedding, only when the model has one
//                                 (SigLIP: its probe's pooled row)
//   x_probe_attention.npy [N, heads, T] SigLIP's probe's attention over the final tokens, only for a
//                                 model that pools with a probe (its x_features row 0 is the first patch's)
// T = 1 + registers + grid_h·grid_w, in the model's token order (class, registers, patches
// row-major). The norms and the tokens let the token diagnostics be checked from outside.
// and with a class c (ForwardRequest::classes), from one backward pass of the logit y_c
// (core/vit_backward.hpp) and the relevance maps on it (core/relevance.hpp):
//   x_grad_attention.npy     [N, layers, heads, T, T]  ∂y_c/∂A_l, A_l layer l's attention probabilities
//   x_grad_blocks.npy        [N, layers, T, width]     ∂y_c/∂x_l, x_l the input of block l
//   x_relevance_<method>.npy [N, grid_h, grid_w]       one per method asked, before any display scaling
// With several classes, each class's files carry its index, as the image command's do:
// x_grad_attention_c<C>.npy, x_grad_blocks_c<C>.npy, x_relevance_<method>_c<C>.npy; when the
// classes are texts (the model's zero-shot head, core/zero_shot.hpp), _t<i>, i the text's place.
// With texts (ForwardRequest::texts, a CLIP or SigLIP model's text tower: core/text_tower.hpp),
// once for all of them:
//   text_ids.npy        int32 [n, ctx]  the token ids (CLIP: clip.tokenize's rows, ctx 77;
//                                       SigLIP: its processor's, padded with "</s>" to ctx 64)
//   text_embedding.npy  [n, E]          the L2-normalised text embeddings
//   text_attention.npy  [n, layers, heads, ctx, ctx]  each layer's attention. CLIP: causal; rows
//                                       and columns after a text's end-of-text token are zeros
//                                       (not computed: the contract of text_tower.hpp). SigLIP:
//                                       no mask, every position computed (the padding too: its
//                                       embedding is the last position's row)
// With class labels instead (ForwardRequest::class_labels: zero-shot classes, each row of
// class_embeddings.hpp's prompt ensemble, given to write_class_texts):
//   text_embedding.npy  [classes, E]    the classes' unit embeddings, in label order
//   text_labels.txt                     the labels, one a line (UTF-8), row i's on line i + 1
// and for each input, in place of a classifier's logits (CLIP and SigLIP have none), against the
// texts or the classes:
//   x_logits.npy        [N, n]  exp(logit_scale)·cos(image embedding, text embedding), CLIP's
//                                logits_per_image; SigLIP's adds logit_bias (its logits_per_text
//                                transposed), its image embedding the probe's pooled row
//   x_probs.npy         [N, n]  CLIP: each row's softmax over the texts; SigLIP: each logit's
//                                sigmoid (each image-text pair on its own)
//   x_text_relevance.npy [N, n, layers, ctx]  which words mattered to each logit: Chefer's rollout
//                                over the text tower (core/text_relevance.hpp), R[pooled, j] at the
//                                prompt's tokens j (CLIP: 1 … EOT − 1; SigLIP: 0 up to its "</s>")
//                                and zeros elsewhere; [i, t, s] is the rollout from layer s to the
//                                last (the CLIP notebook's start_layer_text = s; its default, the
//                                last layer alone, is s = layers − 1)
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/relevance.hpp"
#include "core/text_tower.hpp"
#include "core/vit.hpp"
#include "class_choice.hpp"
#include "map_methods.hpp"

namespace vitattn::pipeline {

struct ForwardRequest {
  std::vector<std::filesystem::path> inputs;  // .npy files
  std::filesystem::path output;               // the folder the outputs go to
  std::filesystem::path model_file;           // the weights read, never replaced; empty: none
  bool scale = true;                          // attention scores divided by √d_head
  // The gradients of the logit y_c for each c, in this order (distinct); none when empty. A
  // model without a classifier, a c it does not have, a LeGrad layer it does not have: each
  // input fails with the core's Error (the CLI refuses them before any input).
  std::vector<int> classes;
  std::vector<MapMethod> methods;             // the class-specific maps written beside the gradients
  float discard_ratio = 0.0f;                 // grad-rollout's
  float lrp_gamma_linear = lrp_default_gamma_linear;  // AttnLRP's γs (core/lrp.hpp)
  float lrp_gamma_conv = lrp_default_gamma_conv;
  int legrad_from = -2;                       // LeGrad's first layer; negative counts from the end
  int chefer_from = 0;                        // Chefer's first layer, counted alike (0: every layer)
  ClassSource class_source = ClassSource::classifier;  // texts: the classes are texts, their files tagged _t<i>
  // The texts' token ids, each row the text tower's context long (clip.tokenize's, SigLIP's
  // processor's: cli/text_prompts.hpp); none: no text outputs.
  std::vector<std::vector<std::int32_t>> texts;
  // The zero-shot classes' labels, in row order; none: no class outputs. Not with texts.
  std::vector<std::string> class_labels;
  std::vector<std::filesystem::path> class_files;  // the labels' and templates' files read, never replaced
};

// The texts' files, one of each for every text (named always when there are texts).
struct TextOutputs {
  std::filesystem::path ids, embedding, attention;
  std::filesystem::path labels;  // with class labels: these two only (embedding, labels)
  std::vector<std::filesystem::path> all() const;  // every name above that is set
};
TextOutputs text_outputs(const ForwardRequest& request);

// What forward_texts computed: the embeddings the logits read, and the files it wrote.
struct EncodedTexts {
  Matrix embeddings;                // (n, E) L2-normalised
  const TextTower* tower = nullptr; // the tower they went through (its logits' and probabilities' rules; the
                                    // word relevance runs it again, with a tape); outlives this
  TextOutputs written;
};

// Every text of the request through `tower`, its three files written. Throws Error (nothing of
// it written) when the tower refuses an id or its activations overflow.
EncodedTexts forward_texts(const TextTower& tower, const ForwardRequest& request);

// The request's classes' embeddings (rows: its class_labels, in order; unit rows, from
// pipeline/class_embeddings.hpp) and labels written. Throws Error (nothing of it written) when
// the rows are not one per label.
EncodedTexts write_class_texts(const Matrix& embeddings, const TextTower& tower, const ForwardRequest& request);

// What forward writes for one class of one input (relevance: one per method, in its order).
struct ClassOutputs {
  int class_index = 0;
  std::filesystem::path grad_attention, grad_blocks;
  std::vector<std::filesystem::path> relevance;
};

// What forward writes for one input, named in one place. The gradients' and the maps' names
// are there only when the request has classes: one ClassOutputs each, in the request's order.
struct ForwardOutputs {
  std::filesystem::path attention, features, tokens, norms, logits;
  std::filesystem::path embedding, probe_attention;  // named always, written when the model has them
  std::filesystem::path probs;                       // named with texts only (the image-text probabilities)
  std::filesystem::path text_relevance;              // named with texts, written beside their logits
  std::vector<ClassOutputs> classes;
  std::vector<std::filesystem::path> all() const;  // every name above that is set
};
ForwardOutputs forward_outputs(const ForwardRequest& request, const std::filesystem::path& input);

// Before any work: no output replaces an input (a tensor, the model file) or another input's
// output. Throws Error naming the input and the file.
void check_forward_outputs(const ForwardRequest& request);

struct ForwardInputResult {
  std::filesystem::path input;
  std::size_t images = 0;  // the N of the input
  ForwardOutputs written;  // what was written: logits empty when the model has no classifier, embedding
                           // when it has no projection
  std::string error;       // empty: done; else the one-line message, nothing written for it
};

// Each input in turn; one that fails (not [N, 3, H, W], not a multiple of the patch size, a
// non-finite value, an unwritable output) is said in its result and the others go on. The
// output folder must exist (prepare_output_folder), and the model is one open_model gave
// (validated there, once).
// With `texts` (forward_texts's), each input's logits are the image-text logits [N, n]; the
// image and text embeddings must be as wide (the CLI checks it before any input).
std::vector<ForwardInputResult> forward_files(const VitModel& model, const ForwardRequest& request,
                                              const EncodedTexts* texts = nullptr);

}  // namespace vitattn::pipeline
