#include "process_image.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/classify.hpp"
#include "core/query_key.hpp"
#include "core/relevance.hpp"
#include "files/file_io.hpp"
#include "image/image_loader.hpp"
#include "tensors/npy.hpp"
#include "output_folders.hpp"

namespace vitattn::pipeline {
using namespace vitattn::io;  // the formats this step reads and writes
namespace fs = std::filesystem;
namespace {

// masks (grid_h, grid_w) each, 1 = kept → <name>_mask.npy as bool [grid_h, grid_w], or
// [n_maps, grid_h, grid_w] when `stacked` (--head all).
void write_masks(const std::filesystem::path& path, const std::vector<Matrix>& masks, bool stacked) {
  std::vector<std::uint8_t> cells;
  for (const Matrix& m : masks)
    for (Eigen::Index i = 0; i < m.size(); ++i) cells.push_back(m.data()[i] > 0.5f ? 1 : 0);
  std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(masks.front().rows()),
                                   static_cast<std::uint64_t>(masks.front().cols())};
  if (stacked) shape.insert(shape.begin(), masks.size());
  write_npy_bool(path, cells.data(), shape);
}

// One line for the report page: "ViT, 12 layers, 6 heads, D=384, d_head=64, P=16, 4 registers".
std::string model_summary(const VitModel& model) {
  std::string line = fmt::format("ViT, {} layer{}, {} head{}, D={}, d_head={}, P={}", model.n_layers(),
                                 model.n_layers() == 1 ? "" : "s", model.n_heads, model.n_heads == 1 ? "" : "s",
                                 model.d_model(), model.d_head(), model.patch_size);
  if (model.n_registers() > 0) line += fmt::format(", {} registers", model.n_registers());
  return line;
}

// The maps to draw: one, or one per head. Each (grid_h, grid_w), unnormalised.
std::vector<Matrix> encoder_maps(const VitModel& model, const std::vector<Matrix>& heads, const Matrix& rollout,
                                 const EncoderView& view, int grid_h, int grid_w) {
  const int first = model.first_patch_token();
  std::vector<Matrix> maps;
  if (view.rollout) {
    maps.push_back(class_token_map(rollout, first, grid_h, grid_w));
  } else if (view.head == HeadChoice::all) {
    for (const Matrix& a : heads) maps.push_back(class_token_map(a, first, grid_h, grid_w));
  } else if (view.head == HeadChoice::index) {
    maps.push_back(class_token_map(heads[static_cast<std::size_t>(view.head_index)], first, grid_h, grid_w));
  } else {
    maps.push_back(class_token_map(fuse_heads(heads, view.fusion), first, grid_h, grid_w));
  }
  return maps;
}

// The chosen layer's heads and the rollout up to it, from one forward pass. `report`, when
// given, hears every layer (all of them run); `classify` runs every block for the logits.
struct Attended {
  std::vector<Matrix> heads;  // the chosen layer's, (n_tokens, n_tokens) each
  Matrix rollout;             // (n_tokens, n_tokens), with view.rollout
  ForwardResult result;
};

Attended attend_steps(const VitModel& model, const ImageTensor& x, const ProcessOptions& options, ReportBuilder* report,
                      bool classify) {
  const EncoderView& view = options.view;
  const int layer = resolve_layer(view.layer, model.n_layers());
  ForwardOptions fo;
  // The logits need every block, and so does the report's page; the maps still come from `layer`.
  fo.last_layer = classify ? -1 : report ? model.n_layers() - 1 : layer;
  fo.keep_from_layer = view.rollout || report ? 0 : layer;
  fo.scale = options.scale;
  // Rollout folds each layer in as it comes, so memory holds one layer's heads, not all.
  AttentionRollout rollout(view.fusion, view.discard_ratio);
  Attended a;
  fo.on_attention = [&](int l, const std::vector<Matrix>& layer_heads) {
    if (view.rollout && l <= layer) rollout.add_layer(layer_heads);
    if (l == layer) a.heads = layer_heads;
    if (report) report->add_layer(l, layer_heads);
  };
  a.result = forward(model, x, fo);
  if (view.rollout) a.rollout = rollout.result();
  return a;
}

// --faithfulness: the maps the run draws, named by their method, for the top-1 class: one map,
// or one per head with --head all ("attention_h<h>").
std::vector<ScoredMap> drawn_maps_to_score(const std::vector<Matrix>& maps, const EncoderView& view,
                                           const RowVector& logits) {
  const int top1 = top_classes(logits, 1).front().index;
  std::vector<ScoredMap> scored;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const std::string method = view.rollout ? "rollout" : maps.size() > 1 ? fmt::format("attention_h{}", i) : "attention";
    scored.push_back({method, top1, maps[i]});
  }
  return scored;
}

// The core's errors name no file (activations that became non-finite): `source` is the input's.
Attended attend(const VitModel& model, const ImageTensor& x, const ProcessOptions& options, ReportBuilder* report,
                bool classify, const std::string& source) {
  try {
    return attend_steps(model, x, options, report, classify);
  } catch (const Error& e) {
    if (e.subject()) throw;  // a chosen value: the caller says it with its option
    throw Error(source + ": " + e.what());
  }
}

// The relevance methods of the report page, each with the name the page shows.
constexpr std::pair<RelevanceMethod, const char*> kReportMethods[] = {{RelevanceMethod::chefer, "chefer"},
                                                                      {RelevanceMethod::grad_rollout, "grad-rollout"},
                                                                      {RelevanceMethod::legrad, "legrad"},
                                                                      {RelevanceMethod::gradcam, "gradcam"}};

// How many classes the report page lists: none without a classifier.
int report_class_count(const VitModel& model, const ProcessOptions& options) {
  if (!options.report || !options.report_classes || model.w_head.size() == 0) return 0;
  return std::min(options.report_classes->k, static_cast<int>(model.w_head.rows()));
}

// The report's class picker: the most likely classes with their probabilities and, for each
// the page keeps, every relevance method's map. One forward records the tape, then one
// backward a class serves every method (relevance_maps). The maps use the layers the run
// draws (--layer bounds them, as it does the attention) and rollout's --discard-ratio.
void add_class_maps(ReportBuilder& report, const VitModel& model, const ImageTensor& x, const ProcessOptions& options,
                    int grid_h, int grid_w) {
  ForwardTape tape;
  ForwardOptions fo;
  fo.scale = options.scale;
  fo.tape = &tape;
  const ForwardResult result = forward(model, x, fo);
  const std::vector<ClassScore> top = top_classes(result.logits, report_class_count(model, options));
  std::vector<ReportClass> classes;
  for (const ClassScore& c : top) classes.push_back({c.index, options.report_classes->labels.label(c.index), c.probability});
  RelevanceSettings settings;
  settings.last_layer = resolve_layer(options.view.layer, model.n_layers());
  settings.discard_ratio = options.view.discard_ratio;
  settings.scale = options.scale;
  // LeGrad as its authors' code: the last two layers (the one layer of a one-layer model).
  settings.legrad_from = std::max(model.n_layers() - 2, 0);
  report.add_predictions(classes, fmt::format("The gradients of the class's logit (before the softmax) through layers "
                                              "0…{} (LeGrad: {}…{}, each layer's own logit).",
                                              settings.last_layer, std::min(settings.legrad_from, settings.last_layer),
                                              settings.last_layer));
  std::vector<RelevanceMethod> methods;
  for (const auto& [method, name] : kReportMethods) methods.push_back(method);
  for (int rank = 0; rank < report.classes_kept() && rank < static_cast<int>(top.size()); ++rank) {
    settings.class_index = top[static_cast<std::size_t>(rank)].index;
    const std::vector<Matrix> maps = relevance_maps(model, tape, methods, settings, grid_h, grid_w);
    for (std::size_t m = 0; m < maps.size(); ++m) report.add_relevance(kReportMethods[m].second, settings.class_index, maps[m]);
  }
}

// The model input's size and grid for a decoded image (H, W).
InputGrid input_grid(const cv::Mat& bgr, const VitModel& model, const EncoderView& view) {
  const int s = view.img_size > 0 ? view.img_size : model.grid_h * model.patch_size;
  auto [width, height] = view.img_size > 0 || view.keep_aspect
                             ? input_size(bgr.cols, bgr.rows, s, model.patch_size, view.keep_aspect)
                             : std::pair{model.grid_w * model.patch_size, model.grid_h * model.patch_size};
  return {bgr.cols, bgr.rows, width, height, width / model.patch_size, height / model.patch_size};
}

void process(const InputJob& job, const VitModel& model, const ProcessOptions& options) {
  const EncoderView& view = options.view;
  const int layer = resolve_layer(view.layer, model.n_layers());

  const cv::Mat bgr = load_image(job.input, options.max_pixels, options.damage);  // (H, W) original
  const InputGrid g = input_grid(bgr, model, view);
  const int width = g.input_w, height = g.input_h, grid_h = g.grid_h, grid_w = g.grid_w;
  const ImageTensor x = preprocess(bgr, width, height, model.norm);  // (3, height, width)
  if (options.on_grid) options.on_grid(job, g);

  std::optional<ReportBuilder> report;  // the page shows every layer: all of them run
  if (options.report)
    report.emplace(ReportShape{model.n_layers(), model.n_heads, model.first_patch_token(), grid_h, grid_w,
                               model.patch_size, width, height, report_class_count(model, options),
                               static_cast<int>(std::size(kReportMethods))},
                   layer, *options.report);
  const bool classify = (options.top || options.faithfulness) && model.w_head.size() > 0;
  const Attended attended = attend(model, x, options, report ? &*report : nullptr, classify, display(job.input));
  const std::vector<Matrix>& heads = attended.heads;
  const ForwardResult& result = attended.result;
  const std::vector<Matrix> maps = encoder_maps(model, heads, attended.rollout, view, grid_h, grid_w);

  std::vector<Matrix> masks;  // (grid_h, grid_w) each, with --threshold
  const std::vector<cv::Mat> overlays = draw_overlays(bgr, maps, options, &masks);

  if (report) {  // one block, one head (the seeded model): its q and k for the step-by-step panel
    if (model.n_layers() == 1 && model.n_heads == 1) {
      const QueryKey qk = query_key(model, x);
      report->add_query_key(qk.q, qk.k, options.scale);
    }
    if (report_class_count(model, options) > 0) {
      try {
        add_class_maps(*report, model, x, options, grid_h, grid_w);
      } catch (const Error& e) {  // as attend's: the core's errors name no file
        if (e.subject()) throw;
        throw Error(display(job.input) + ": " + e.what());
      }
    }
    report->write(with_suffix(job.output_base, report_suffix().c_str()), job.input.filename().string(), bgr,
                  maps.front(), model_summary(model));
  }
  if (options.save_attention) {
    const auto n_tokens = static_cast<std::uint64_t>(heads.front().rows());
    std::vector<float> all;  // (n_heads, n_tokens, n_tokens); one head: (n_tokens, n_tokens)
    all.reserve(heads.size() * n_tokens * n_tokens);
    for (const Matrix& a : heads) all.insert(all.end(), a.data(), a.data() + a.size());
    std::vector<std::uint64_t> attn_shape{n_tokens, n_tokens};
    if (heads.size() > 1) attn_shape.insert(attn_shape.begin(), heads.size());
    write_npy(with_suffix(job.output_base, "_attn.npy"), all.data(), attn_shape);
    std::vector<float> drawn;  // (grid_h, grid_w), or (n_heads, grid_h, grid_w) with --head all
    for (const Matrix& m : maps) drawn.insert(drawn.end(), m.data(), m.data() + m.size());
    std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(grid_h), static_cast<std::uint64_t>(grid_w)};
    const bool stacked = view.head == HeadChoice::all && !view.rollout;
    if (stacked) shape.insert(shape.begin(), maps.size());
    write_npy(with_suffix(job.output_base, "_cls.npy"), drawn.data(), shape);
    if (!masks.empty()) write_masks(with_suffix(job.output_base, "_mask.npy"), masks, stacked);
  }
  if (options.faithfulness && classify)
    write_faithfulness_part(with_suffix(job.output_base, batch_file(&OutputSet::faithfulness).part_suffix), job.input,
                            model, x, drawn_maps_to_score(maps, view, result.logits), *options.faithfulness,
                            options.scale);
  std::vector<ClassScore> classes;  // --top: written before the overlay, which is written last
  if (classify && options.top) {
    classes = top_classes(result.logits, options.top->k);
    write_predictions(with_suffix(job.output_base, batch_file(&OutputSet::top).part_suffix), {{job.input, classes}},
                      options.top->labels);
  }
  const std::string suffix_text = overlay_suffix(extension(options.format.format));
  const char* suffix = suffix_text.c_str();
  if (overlays.size() == 1) {
    write_image_atomic(with_suffix(job.output_base, suffix), overlays.front(), options.format);
    if (classify && options.top && options.on_top) options.on_top(job, std::move(classes));
    return;
  }
  for (std::size_t h = 0; h < overlays.size(); ++h) {
    write_image_atomic(with_suffix(job.output_base, head_overlay_suffix(static_cast<int>(h), extension(options.format.format)).c_str()),
                       overlays[h], options.format);
  }
  // The sheet of all heads is written last: when it exists, the per-head files do too.
  write_image_atomic(with_suffix(job.output_base, suffix), head_sheet(overlays), options.format);
  if (classify && options.top && options.on_top) options.on_top(job, std::move(classes));
}

}  // namespace

std::vector<Matrix> attention_maps(const cv::Mat& bgr, const VitModel& model, const ProcessOptions& options,
                                   InputGrid* grid) {
  const InputGrid g = input_grid(bgr, model, options.view);
  if (grid) *grid = g;
  const ImageTensor x = preprocess(bgr, g.input_w, g.input_h, model.norm);  // (3, input_h, input_w)
  const Attended attended = attend_steps(model, x, options, nullptr, false);
  return encoder_maps(model, attended.heads, attended.rollout, options.view, g.grid_h, g.grid_w);
}

std::vector<cv::Mat> draw_overlays(const cv::Mat& bgr, const std::vector<Matrix>& maps, const ProcessOptions& options,
                                   std::vector<Matrix>* masks) {
  std::vector<cv::Mat> overlays;
  for (const Matrix& map : maps) {
    overlays.push_back(render_overlay(bgr, map, options.render));
    if (!options.view.threshold) continue;
    const Matrix mask = mass_mask(map, *options.view.threshold);  // on the probabilities, not the display scale
    draw_mask_outline(overlays.back(), mask);
    if (masks) masks->push_back(mask);
  }
  return overlays;
}

cv::Mat head_sheet(const std::vector<cv::Mat>& overlays) {
  std::vector<std::string> labels;
  for (std::size_t h = 0; h < overlays.size(); ++h) labels.push_back("head " + std::to_string(h));
  return tile_images(overlays, labels, 512);
}

OutputSet written_outputs(const VitModel& model, const ProcessOptions& options) {
  OutputSet outputs;
  outputs.image_extension = extension(options.format.format);
  outputs.save_attention = options.save_attention;
  outputs.mask = options.save_attention && options.view.threshold.has_value();
  outputs.report = options.report.has_value();
  outputs.top = options.top.has_value() && model.w_head.size() > 0;
  outputs.faithfulness = options.faithfulness.has_value() && model.w_head.size() > 0;
  // One overlay per head, beside the sheet, when all heads are drawn and there is more than one.
  if (options.view.head == HeadChoice::all && !options.view.rollout && model.n_heads > 1)
    outputs.head_overlays = model.n_heads;
  return outputs;
}

void process_image(const fs::path& out_dir, const InputJob& job, const VitModel& model, const ProcessOptions& options) {
  check_view(model, options.view, "the model");
  const OutputSet outputs = written_outputs(model, options);
  prepare_output_path(out_dir, job, outputs);  // the folders, and no symlink in the output tree followed
  process(job, model, options);
}

}  // namespace vitattn::pipeline
