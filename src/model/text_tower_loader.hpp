#pragma once
// The text tower (core/text_tower.hpp) from the same file as its image tower, when the file
// holds one: OpenAI / OpenCLIP's names beside "visual.*" (token_embedding, positional_embedding,
// transformer.resblocks, ln_final, text_projection [W, E], logit_scale at the top), Hugging Face
// CLIPModel's beside "vision_model.*" (text_model.*, text_projection.weight [E, W], logit_scale),
// Hugging Face SiglipModel's beside a SigLIP "vision_model.*" (text_model.*, text_model.head
// [E, W] with its bias, logit_scale, logit_bias; no mask, the last position pooled).
// The namings are rows of a table (text_tower_loader.cpp), each tied to the image family it
// ships with, and each saying which tokeniser makes its ids. Nothing here changes how the image
// tower is read.
#include <string>
#include <vector>

#include "core/text_tower.hpp"
#include "tensors/safetensors.hpp"

namespace vitattn::model {

// What load_text_tower found. A file without a text tower: tower absent, `missing` says so. A
// file whose text tower cannot be read (a shape that does not fit, no head count): tower absent,
// `missing` says why, naming the file and the tensor. The image tower is usable either way.
// Which tokeniser's ids a text tower reads (src/text): CLIP's byte-pair encoding (built in), or
// SigLIP's SentencePiece model (spiece.model, a file beside the checkpoint).
enum class TextTokenizer { clip_bpe, sentencepiece };

struct LoadedText {
  TextTower tower;
  TextTokenizer tokenizer = TextTokenizer::clip_bpe;  // the naming's, when there is one
  std::string naming;     // the row's name ("clip", "hf-clip", "siglip"); empty: none
  std::string heads_from; // "config.json's text_config", "width / 64"
  std::string missing;    // empty when the tower was read
  std::vector<std::string> tensors;  // the names read, when the tower was (not "outside the encoder" then)
};

struct TextSettings {
  int heads = 0;          // config.json's text_config.num_attention_heads; 0: width / 64 (OpenAI's model.py)
  float eps = 1e-5f;      // text_config.layer_norm_eps, else the image tower's ε
  Gelu gelu = Gelu::quick;  // text_config.hidden_act, else the image tower's activation
};

// The text tower beside an image tower of `image_family` read at `image_prefix`. Never throws
// for the tower's own faults (see LoadedText); a file that cannot be read at all does.
LoadedText load_text_tower(const tensors::TensorFile& st, const std::string& image_family,
                           const std::string& image_prefix, const TextSettings& settings);

}  // namespace vitattn::model
