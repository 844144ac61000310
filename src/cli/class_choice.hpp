#pragma once
// --class C[,C…]: the classes a class-specific map is about, each given by index or by label
// (any case), checked against the classifier before any image.
#include <string>
#include <vector>

#include "model/class_labels.hpp"
#include "pipeline/map_request.hpp"

namespace vitattn::cli {

// `given` (as typed) → the classes, in that order. Throws Error naming --class and the value:
// an index the classifier of n_classes does not have, a label no class has (naming the closest
// ones), a label when the model has no class names, a class given twice. `model` names the
// model in messages.
std::vector<pipeline::ChosenClass> resolve_classes(const std::vector<std::string>& given, const io::ClassLabels& labels,
                                                   int n_classes, const std::string& model);

// Up to `n` names closest to `text` (edit distance, any case), nearest first, ties in the
// names' order.
std::vector<std::string> closest_names(const std::string& text, const std::vector<std::string>& names, std::size_t n = 3);

}  // namespace vitattn::cli
