#pragma once
// The classes a class-specific map is about, as every front end takes them (the image
// command's and forward's class option, serve's class parameter): one function, so that all
// three take the same words, check them against the model's own classifier and refuse them
// alike, before any image.
//
// A value → its classes, in order:
//   1. The whole value, trimmed, is exactly one class's label: that class. This is how a label
//      that holds commas is given ("cougar, puma, catamount, mountain lion", as Hugging Face's
//      id2label spells ImageNet's), which step 2 would cut apart.
//   2. Else the value is a comma list; each item, trimmed of white space, is
//      - digits: the class of that index;
//      - else a label, looked up tier after tier: the label exactly; one of a label's
//        comma-separated synonyms (each trimmed) exactly; the label in any case; a synonym in
//        any case. The first tier that names a class decides ("cardigan" is the sweater even
//        where "Cardigan", the corgi, matches in any case; "Cardigan" is the corgi of
//        "Cardigan, Cardigan Welsh corgi" though the sweater matches in another case); two
//        classes in that tier are ambiguous.
// Names are compared as bytes, case folded for ASCII letters only (files/text.hpp).
#include <string>
#include <vector>

#include "model/class_labels.hpp"

namespace vitattn::pipeline {

// Where a run's classes come from: a classifier's rows (a checkpoint's head, or zero-shot
// labels with their prompt templates), named by index; or the texts asked about, each a class
// drawn in the order given and named by its place among them (job_outputs.hpp map_tag).
enum class ClassSource { classifier, texts };

// A class a class-specific map is about.
struct ChosenClass {
  int index = 0;      // c: the logit y_c
  std::string label;  // its name, for a sheet's titles; empty when unknown
};

// `values`: each value as given (an option given twice gives two). Returns the classes, each
// once, in the order given, with their labels (empty when the model has none). Throws Error
// about roles::class_choice (view.hpp) with the item as its value: an empty item, an index the
// classifier of n_classes does not have, a label when the model has no names, a label no
// class has (naming the closest), an ambiguous label (listing every candidate with its index),
// a class given twice, any class when n_classes is 0. `model` names the model in messages.
std::vector<ChosenClass> resolve_classes(const std::vector<std::string>& values, const model::ClassLabels& labels,
                                         int n_classes, const std::string& model);

// A class as messages and logs name it: "cardigan" (474), or 474 without a label.
std::string class_name(const ChosenClass& c);
// Several: "cardigan" (474), "Cardigan" (264).
std::string class_names(const std::vector<ChosenClass>& classes);

// The indices of the up to `n` labels closest to `text` (edit distance in any case, to the
// label or to its nearest synonym), nearest first, ties in index order.
std::vector<int> closest_labels(const std::string& text, const std::vector<std::string>& labels, std::size_t n = 3);

}  // namespace vitattn::pipeline
