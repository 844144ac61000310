#pragma once
// The model a command line asks for: seeded, or a file (a ViT checkpoint or the single-head
// layout) with its overrides applied (and described at -v).
#include "core/vit.hpp"
#include "model/class_labels.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error naming the file and what is wrong with it. The options that must fit the model
// (--layer, --head, --img-size) are checked by pipeline::check_view. `verbosity` ≥ 0: a hub
// download shows its progress on a terminal. With `labels`, also finds
// the names of a classifier's classes (class_labels.hpp).
VitModel make_model(const ModelOptions& o, int verbosity, io::ClassLabels* labels = nullptr);


}  // namespace vitattn::cli
