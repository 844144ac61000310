#pragma once
// What a map shows (--method) and for which classes (--class): the class token's attention of
// the view's layer and heads, its rollout, or a class-specific relevance map from the gradients
// of a class logit (core/relevance.hpp). The names here are the ones --method takes and the
// output files carry (job_outputs.hpp puts them into file names).
#include <string>
#include <vector>

#include "core/relevance.hpp"

namespace vitattn::pipeline {

enum class MapMethod { attention, rollout, chefer, grad_rollout, legrad, gradcam };

// Every method, in the order --method all draws them.
const std::vector<MapMethod>& every_method();

// "attention", "rollout", "chefer", "grad-rollout", "legrad", "gradcam".
std::string method_name(MapMethod m);

// The methods of one class's logit (chefer, grad-rollout, legrad, gradcam): they need a
// classifier, and draw one map per class.
bool class_specific(MapMethod m);

// The core's method of a class-specific one (Error for attention and rollout: a caller's bug).
RelevanceMethod relevance_method(MapMethod m);

// A class a class-specific map is about.
struct ChosenClass {
  int index = 0;      // c: the logit y_c
  std::string label;  // its name, for a sheet's titles; empty when unknown
};

}  // namespace vitattn::pipeline
