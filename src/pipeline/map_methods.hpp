#pragma once
// The map methods (--method, serve's method=, the report's picker): what a map shows. The
// class token's attention of the view's layer and heads, its rollout, or a class-specific
// relevance map from the gradients of a class logit (core/relevance.hpp). One table
// (map_methods.cpp) holds each method's row: its name (the one --method takes and the output
// files carry, job_outputs.hpp), the other names the command line takes for it, whether it
// draws one map per class, whether it needs a classifier, which of the core's relevance
// computations makes it, and its place among the report page's maps. Everything else asks the
// table, so that a new method is one row (and, for a class-specific one, its computation in
// the core).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/relevance.hpp"

namespace vitattn::pipeline {

enum class MapMethod { attention, rollout, chefer, grad_rollout, legrad, gradcam, lrp };

// The method drawn when texts are the classes and none is named (the CLI's --text, serve's
// text=): LeGrad, whose authors' code is written for CLIP and SigLIP.
inline constexpr MapMethod kTextsMethod = MapMethod::legrad;
// Chefer's first layer when texts are the classes and none is named: the authors' CLIP
// notebook's start_layer = −1, the last layer alone (the paper's 0 otherwise).
inline constexpr int kTextsCheferFrom = -1;

struct MapMethodRow {
  MapMethod method;
  const char* name;                  // "grad-rollout"
  std::vector<const char*> aliases;  // other names the command line takes: "grad_rollout", "gradrollout"
  bool class_specific;               // one map per class, of that class's logit
  bool needs_classifier;             // refused on a model without one
  RelevanceMap relevance;            // the core's map of a class-specific method; nullptr for the others
  int report_order;                  // its place among the report page's relevance maps; −1: not one of them
};

// The table's rows, in the order --method all draws them.
const std::vector<MapMethodRow>& map_method_rows();

// Every method, in the order --method all draws them.
const std::vector<MapMethod>& every_method();

// "attention", "rollout", "chefer", "grad-rollout", "legrad", "gradcam", "lrp".
std::string method_name(MapMethod m);

// The method of `name` exactly (no alias, case as written); nullopt for any other text.
std::optional<MapMethod> method_named(std::string_view name);

// Each (alias, name) pair of the table, for the command line's choice of names.
std::vector<std::pair<std::string, std::string>> method_aliases();

// The names of `methods`, between them ", " and before the last `last_separator`:
// "attention, rollout, chefer, grad-rollout, legrad, gradcam or lrp" with " or ".
std::string method_names(const std::vector<MapMethod>& methods, std::string_view last_separator);

// The methods of one class's logit (chefer, grad-rollout, legrad, gradcam, lrp): they draw one map
// per class.
bool class_specific(MapMethod m);
std::vector<MapMethod> class_specific_methods();  // in the table's order

// Whether the method needs a classifier (the class-specific ones).
bool needs_classifier(MapMethod m);

// The core's relevance map of a class-specific method (Error for attention and rollout: a
// caller's bug).
RelevanceMap relevance_map(MapMethod m);

// The class-specific maps the report page holds for each class, in the page's order.
std::vector<MapMethod> report_methods();

// The map the report page of a run of `m` opens on: a class-specific method's own, else
// attention (rollout is the page's flag over attention).
std::string report_start_method(MapMethod m);

}  // namespace vitattn::pipeline
