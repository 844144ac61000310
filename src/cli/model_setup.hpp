#pragma once
// The model a command line asks for: seeded, the single-head layout, or a ViT checkpoint
// with its overrides applied (and described at -v).
#include "io/process_image.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error naming the file and what is wrong with it.
io::Model make_model(const Options& o);

}  // namespace vitattn::cli
