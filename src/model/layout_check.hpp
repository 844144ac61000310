#pragma once
// Whether a checkpoint holds a whole model of its family, checked on the tensor names alone,
// once, before any tensor is read. The loader reads what the family names and nothing else,
// so without this check a state dict with tensors missing loads as another model: a block
// removed ends the model there (blocks after it ignored), a norm half present reads as no
// norm, a bias left out reads as zero; each draws a wrong map without a word.
//
// A family's layout (checkpoint_families.hpp) is complete when:
//   - the patch embedding's weight, class token and positions are there; registers optional;
//   - the blocks are numbered 0…L−1 without a gap, and each holds every tensor the family
//     names: both norms (weight and bias), q/k/v (packed or apart), the output projection and
//     the MLP;
//   - biases (in a family with biases, CheckpointFamily::biases): q, k and v each with one or
//     none of them; the projection and the MLP's two linears likewise all or none (a model
//     trained without biases has none); and each bias, like layer scale, in every block or in
//     none;
//   - the norm before the first block is there whole where every model of the family has one
//     (CLIP's ln_pre), whole or absent where some have it (timm's norm_pre);
//   - the final norm, where the family has one, is there whole; the classifier is optional but
//     whole (weight and bias).
// A tensor under the encoder's own names that the layout does not use (a block after a gap, a
// misnamed or unsupported tensor inside a block, an extra part of the patch embedding or of the
// final norm) is an error too, and so is a tensor that another family reads outside its blocks
// and this one does not (`pos_embed`, `cls_token`, `register_tokens`, `head.weight`, … in any
// family's naming, under the same prefix): a file of another family, read as this one (a family
// asked for by name), would draw without its positions, tokens or classifier. Other tensors
// outside the encoder's names (DINO's projection head `head.mlp.*`, an HF pooler, a mask token,
// an optimizer's state) are returned for -v and left alone.
#include <string>
#include <vector>

#include "model/checkpoint_families.hpp"
#include "tensors/safetensors.hpp"

namespace vitattn::model {

struct Layout {
  int n_blocks = 0;
  std::vector<std::string> outside;  // tensors outside the encoder's names, not read (for -v)
};

// Throws Error "PATH: …" naming the tensors: "no blocks.5.* (the blocks go up to blocks.11.)"
// for a gap, else "not a complete timm model: missing …; not of the layout …: …; it holds …,
// which other families read …" (only the last: "not a timm model: it holds …").
Layout check_layout(const tensors::TensorFile& st, const CheckpointFamily& f, const std::string& prefix);

}  // namespace vitattn::model
