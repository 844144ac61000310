#pragma once
// The model a command line asks for: seeded, the single-head layout, or a ViT checkpoint
// with its overrides applied (and described at -v).
#include "io/process_image.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error naming the file and what is wrong with it, or (check_options_fit) the option
// that does not fit the model.
io::Model make_model(const Options& o);

// The option rules that depend on what the model file turns out to be, all of them: options
// the single-head layout does not take, --img-size, --layer and --head against the
// checkpoint's sizes, --save-model (single-head only) and `forward` (encoders only).
// make_model calls it; throws Error.
void check_options_fit(const Options& o, const io::Model& model);

}  // namespace vitattn::cli
