#include "map_request.hpp"

#include "core/error.hpp"

namespace vitattn::pipeline {

const std::vector<MapMethod>& every_method() {
  static const std::vector<MapMethod> all{MapMethod::attention, MapMethod::rollout, MapMethod::chefer,
                                          MapMethod::grad_rollout, MapMethod::legrad, MapMethod::gradcam};
  return all;
}

std::string method_name(MapMethod m) {
  switch (m) {
    case MapMethod::attention: return "attention";
    case MapMethod::rollout: return "rollout";
    case MapMethod::chefer: return "chefer";
    case MapMethod::grad_rollout: return "grad-rollout";
    case MapMethod::legrad: return "legrad";
    case MapMethod::gradcam: return "gradcam";
  }
  return "attention";
}

bool class_specific(MapMethod m) { return m != MapMethod::attention && m != MapMethod::rollout; }

RelevanceMethod relevance_method(MapMethod m) {
  switch (m) {
    case MapMethod::chefer: return RelevanceMethod::chefer;
    case MapMethod::grad_rollout: return RelevanceMethod::grad_rollout;
    case MapMethod::legrad: return RelevanceMethod::legrad;
    case MapMethod::gradcam: return RelevanceMethod::gradcam;
    case MapMethod::attention:
    case MapMethod::rollout: break;
  }
  throw Error(method_name(m) + " is not a class-specific method");
}

}  // namespace vitattn::pipeline
