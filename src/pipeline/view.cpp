#include "view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <istream>

#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "files/text.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

std::optional<HeadSpec> parse_head(std::string_view text) {
  static const std::pair<const char*, HeadFusion> fusions[] = {
      {"mean", HeadFusion::mean}, {"max", HeadFusion::max}, {"min", HeadFusion::min}};
  const std::string lower = files::lower_case(text);
  if (lower == "all") return HeadSpec{HeadChoice::all, 0, HeadFusion::mean};
  for (const auto& [name, fusion] : fusions)
    if (lower == name) return HeadSpec{HeadChoice::fuse, 0, fusion};
  // An index: digits only (no sign, no "nan", no "1.5"), at most 5 of them: heads are few.
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return HeadSpec{HeadChoice::index, std::stoi(std::string(text)), HeadFusion::mean};
}

std::string head_text(const HeadSpec& head) {
  switch (head.choice) {
    case HeadChoice::index: return std::to_string(head.index);
    case HeadChoice::all: return "all";
    case HeadChoice::fuse: break;
  }
  return head.fusion == HeadFusion::max ? "max" : head.fusion == HeadFusion::min ? "min" : "mean";
}

std::istream& operator>>(std::istream& in, HeadSpec& head) {
  std::string text;
  in >> text;
  if (const auto parsed = parse_head(text)) head = *parsed;
  else in.setstate(std::ios::failbit);
  return in;
}

int resolve_layer(int layer, int n_layers) {
  const int l = layer < 0 ? n_layers + layer : layer;
  if (l < 0 || l >= n_layers)
    throw Error({roles::layer, std::to_string(layer)},
                      "the model has layers 0…" + std::to_string(n_layers - 1) + " (or −1…−" +
                          std::to_string(n_layers) + " from the end)");
  return l;
}

int drawn_layer(const EncoderView& view) {
  if (view.layer < 0) throw Error("the view's layer " + std::to_string(view.layer) + " was not resolved (check_view)");
  return view.layer;
}

bool draws(const EncoderView& view, MapMethod m) {
  return std::find(view.methods.begin(), view.methods.end(), m) != view.methods.end();
}

bool needs_gradients(const EncoderView& view) {
  return std::any_of(view.methods.begin(), view.methods.end(), class_specific);
}

std::vector<MapSlot> map_slots(const EncoderView& view, int n_heads) {
  std::vector<MapSlot> slots;
  if (view.head == HeadChoice::all && view.methods == std::vector<MapMethod>{MapMethod::attention}) {
    for (int h = 0; h < n_heads; ++h) slots.push_back({MapMethod::attention, h, -1, n_heads > 1 ? head_tag(h) : ""});
    return slots;
  }
  const bool several_methods = view.methods.size() > 1, several_classes = view.classes.size() > 1;
  for (MapMethod m : view.methods) {
    const std::string method = several_methods ? method_name(m) : "";
    if (!class_specific(m)) {
      slots.push_back({m, -1, -1, map_tag(method, std::nullopt)});
      continue;
    }
    const std::size_t n_classes = std::max<std::size_t>(1, view.classes.size());
    for (std::size_t c = 0; c < n_classes; ++c)
      slots.push_back({m, -1, static_cast<int>(c),
                       map_tag(method, several_classes ? std::optional<int>(view.classes[c].index) : std::nullopt,
                               view.class_source)});
  }
  if (slots.size() == 1) slots.front().tag.clear();
  return slots;
}

namespace {

// The class-specific methods' needs: a classifier, its classes, LeGrad's layers.
void check_classes(const VitModel& model, const EncoderView& view, const std::string& source) {
  const int n_classes = model.n_classes();
  for (MapMethod m : view.methods)
    if (needs_classifier(m) && !model.has_classifier())
      throw Error({roles::method, method_name(m)},
                  no_classifier_reason(model).empty()
                      ? source + " has no classifier, so no class logit to explain (attention and rollout need none)"
                      : source + " has no classifier; " + no_classifier_reason(model));
  for (const ChosenClass& c : view.classes)
    if (c.index < 0 || c.index >= n_classes)
      throw Error({roles::class_choice, std::to_string(c.index)},
                  !model.has_classifier() ? source + " has no classifier" + no_classifier_note(model)
                                 : fmt::format("{} has classes 0…{}", source, n_classes - 1));
  // −K is the last K layers, every layer on a model of fewer (relevance.hpp: the default −2 on
  // one block): only a first layer past the last one is refused.
  if (draws(view, MapMethod::chefer) && view.chefer_from >= model.n_layers())
    throw Error({roles::chefer_from, std::to_string(view.chefer_from)},
                fmt::format("the model has layers 0…{} (negative values count from the end)", model.n_layers() - 1));
  if (draws(view, MapMethod::legrad) && view.legrad_from >= model.n_layers())
    throw Error({roles::legrad_from, std::to_string(view.legrad_from)},
                fmt::format("the model has layers 0…{} (negative values count from the end)", model.n_layers() - 1));
}

}  // namespace

int query_row(const VitModel& model, QueryToken query) {
  return query == QueryToken::dist && model.has_dist() && model.has_class_token() ? 1 : 0;
}

int check_view(const VitModel& model, const EncoderView& view, const std::string& source) {
  const int layer = resolve_layer(view.layer, model.n_layers());
  if (model.pooling == Pooling::probe && layer != model.n_layers() - 1)
    throw Error({roles::layer, std::to_string(view.layer)},
                fmt::format("a SigLIP model's map is its probe's attention, which reads the last layer's output only "
                            "(layer {} or −1)", model.n_layers() - 1));
  if (view.query == QueryToken::dist && !model.has_dist())
    throw Error({roles::query, "dist"}, "the model has no distillation token (only distilled DeiT has one)", source);
  check_classes(model, view, source);
  if (view.head == HeadChoice::index && view.head_index >= model.n_heads)
    throw Error({roles::head, std::to_string(view.head_index)},
                      "the model has heads 0…" + std::to_string(model.n_heads - 1));
  const int p = model.patch_size;
  if (view.img_size == 0) {
    if (model.grid_h * model.grid_w > kMaxPatches)
      throw Error({roles::input_size, ""},
                        fmt::format("its own grid is {}x{} = {} patches, over the cap of {}; give a smaller input size",
                                    model.grid_w, model.grid_h, model.grid_w * model.grid_h, kMaxPatches),
                        source);
    return layer;
  }
  const std::string s = std::to_string(view.img_size);
  if (view.img_size % p != 0)
    throw Error({roles::input_size, s}, "not a multiple of the patch size " + std::to_string(p));
  if ((view.img_size / p) * (view.img_size / p) > kMaxPatches)
    throw Error({roles::input_size, s},
                      "makes more than " + std::to_string(kMaxPatches) + " patches of " + std::to_string(p) + " pixels");
  return layer;
}

std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect) {
  int w = img_size, h = img_size;
  if (keep_aspect) {
    const double aspect = static_cast<double>(std::max(image_w, image_h)) / std::min(image_w, image_h);
    const double longer = std::max(1.0, std::round(img_size * aspect / patch_size)) * patch_size;
    const double along = longer / patch_size, across = img_size / patch_size;  // patches (double: a 10⁸:1 image)
    if (along * across > kMaxPatches) {
      const bool wide = image_w >= image_h;
      // The caller may add the role's flag at the end: the advice ends on the role's own words.
      throw Error({roles::keep_aspect, ""},
                  fmt::format("with its aspect ratio kept, a {}x{} image at input size {} makes a {:.0f}x{:.0f} grid, "
                              "{:.0f} patches, over the cap of {}; give a smaller input size, or do not keep the aspect "
                              "ratio",
                              image_w, image_h, img_size, wide ? along : across, wide ? across : along, along * across,
                              kMaxPatches));
    }
    (image_w >= image_h ? w : h) = static_cast<int>(longer);
  }
  return {w, h};
}

}  // namespace vitattn::pipeline
