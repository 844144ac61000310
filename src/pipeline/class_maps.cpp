#include "class_maps.hpp"

#include <algorithm>

#include "core/classify.hpp"
#include "core/error.hpp"

namespace vitattn::pipeline {

const Matrix& ClassMaps::map(std::size_t class_slot, MapMethod m) const {
  const auto it = std::find(methods.begin(), methods.end(), m);
  if (it == methods.end() || class_slot >= maps.size())
    throw Error("no " + method_name(m) + " map drawn for this class");  // a caller's bug
  return maps[class_slot][static_cast<std::size_t>(it - methods.begin())];
}

Matrix ClassMaps::pixels(std::size_t class_slot, MapMethod m) const {
  if (m != MapMethod::lrp || class_slot >= lrp_pixels.size()) return Matrix();
  return lrp_pixels[class_slot];
}

ClassMaps class_maps(const VitModel& model, const ForwardTape& tape, const RowVector& logits, const EncoderView& view,
                     bool scale, int grid_h, int grid_w) {
  ClassMaps out;
  std::vector<RelevanceMap> core_methods;
  for (MapMethod m : view.methods)
    if (class_specific(m)) {
      out.methods.push_back(m);
      core_methods.push_back(relevance_map(m));
    }
  out.classes = view.classes;
  if (out.classes.empty()) {
    const int top = top_classes(logits, 1).front().index;  // ties: the lower index
    const auto i = static_cast<std::size_t>(top);
    out.classes.push_back({top, i < view.class_names.size() ? view.class_names[i] : ""});
  }
  RelevanceSettings s;
  s.last_layer = drawn_layer(view);  // resolved by the view's check
  s.legrad_from = view.legrad_from;
  s.chefer_from = view.chefer_from;
  s.discard_ratio = view.discard_ratio;
  s.lrp_gamma_linear = view.lrp_gamma_linear;
  s.lrp_gamma_conv = view.lrp_gamma_conv;
  s.scale = scale;
  const bool lrp = std::find(out.methods.begin(), out.methods.end(), MapMethod::lrp) != out.methods.end();
  for (const ChosenClass& c : out.classes) {
    s.class_index = c.index;
    Matrix pixels;
    out.maps.push_back(relevance_maps(model, tape, core_methods, s, grid_h, grid_w, lrp ? &pixels : nullptr));
    if (lrp) out.lrp_pixels.push_back(std::move(pixels));
  }
  return out;
}

}  // namespace vitattn::pipeline
