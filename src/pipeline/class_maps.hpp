#pragma once
// The class-specific maps of one image (--method chefer|grad-rollout|legrad|gradcam): for each
// class the view names, or else the image's most likely class, every class-specific method the
// view draws, from the tape of one forward (core/relevance.hpp: one backward per class, plus
// LeGrad's per-layer ones). The layers used end at the view's --layer.
#include <vector>

#include "core/relevance.hpp"
#include "core/vit.hpp"
#include "view.hpp"

namespace vitattn::pipeline {

struct ClassMaps {
  std::vector<ChosenClass> classes;       // the view's, or the top-1 (labelled from view.class_names)
  std::vector<MapMethod> methods;         // the view's class-specific methods, in its order
  std::vector<std::vector<Matrix>> maps;  // [class][method] (grid_h, grid_w), before display scaling
  std::vector<Matrix> lrp_pixels;         // [class] (S_h, S_w) lrp's map at the pixels, when lrp is drawn

  // The map of classes[class_slot] by m (one of `methods`).
  const Matrix& map(std::size_t class_slot, MapMethod m) const;
  // Its values at the pixels: lrp's; empty for every other method.
  Matrix pixels(std::size_t class_slot, MapMethod m) const;
};

// `logits` (n_classes): the forward's, for the top-1 when the view names no class. `scale`: the
// forward's 1/√d_head. Throws Error (from the core) when a layer or class does not fit.
ClassMaps class_maps(const VitModel& model, const ForwardTape& tape, const RowVector& logits, const EncoderView& view,
                     bool scale, int grid_h, int grid_w);

}  // namespace vitattn::pipeline
