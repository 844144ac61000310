#pragma once
// The model a command line asks for: seeded, the single-head layout, or a ViT checkpoint
// with its overrides applied (and described at -v).
#include "io/class_labels.hpp"
#include "io/process_image.hpp"
#include "options.hpp"

namespace vitattn::cli {

// Throws Error naming the file and what is wrong with it. With `labels`, also finds the names
// of a classifier's classes (class_labels.hpp).
io::Model make_model(const Options& o, io::ClassLabels* labels = nullptr);

}  // namespace vitattn::cli
