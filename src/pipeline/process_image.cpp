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
#include "core/token_diagnostics.hpp"
#include "core/gemm.hpp"
#include "files/file_io.hpp"
#include "image/image_loader.hpp"
#include "tensors/npy.hpp"
#include "class_maps.hpp"
#include "heads_part.hpp"
#include "job_record.hpp"
#include "output_folders.hpp"

namespace vitattn::pipeline {
using namespace vitattn::files;  // the formats this step reads and writes
using namespace vitattn::image;
using namespace vitattn::report;
using namespace vitattn::tensors;
namespace fs = std::filesystem;
namespace {

// m (rows, cols) → its values row after row (Eigen's Matrix is row-major: its own order).
std::vector<float> row_major(const Matrix& m) { return std::vector<float>(m.data(), m.data() + m.size()); }

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

// The query token's (view.query: the class token's by default) attention map by `method` (attention or rollout), the view's head or fused
// heads (one head of --head all is map_slots' own). (grid_h, grid_w), unnormalised.
Matrix encoder_map(const VitModel& model, const std::vector<Matrix>& heads, const Matrix& rollout,
                   const EncoderView& view, MapMethod method, int grid_h, int grid_w) {
  const int first = model.first_patch_token(), row = query_row(model, view.query);
  if (method == MapMethod::rollout) return query_token_map(rollout, row, first, grid_h, grid_w);
  if (view.head == HeadChoice::index)
    return query_token_map(heads[static_cast<std::size_t>(view.head_index)], row, first, grid_h, grid_w);
  return query_token_map(fuse_heads(heads, view.fusion), row, first, grid_h, grid_w);
}

// What a backward reads (vit.hpp's ForwardTape), one per worker thread, kept from one image to the
// next: a forward recording into it reuses its storage instead of faulting in a whole tape of fresh
// pages per image (its size: ForwardTape; docs/relevance.md measures both). It holds the last
// image's activations until the worker ends; nothing reads them after that image's maps are made.
ForwardTape& worker_tape() {
  thread_local ForwardTape tape;
  return tape;
}

// The chosen layer's heads, the rollout up to it and the class-specific maps, from one forward
// pass. `report`, when given, hears every layer (all of them run); `classify` runs every block
// for the logits (and so does a class-specific method, which records the forward's tape).
// With the token diagnostics (needs_token_diagnostics), every block runs and each layer's
// attention and output are heard by a TokenRecorder.
struct Attended {
  std::vector<Matrix> heads;  // the chosen layer's, (n_tokens, n_tokens) each
  Matrix rollout;             // (n_tokens, n_tokens), when the view draws the rollout
  ClassMaps relevance;        // when the view draws a class-specific method
  ForwardResult result;
  std::optional<TokenDiagnostics> tokens;  // when needs_token_diagnostics
  std::optional<PcaPicture> pca;           // --pca: the grid's colours (the report can embed them)
};

// The last layer's patch features: result.tokens (n_tokens, width) → (n_patches, width).
Matrix patch_rows(const VitModel& model, const ForwardResult& result) {
  return result.tokens.bottomRows(result.tokens.rows() - model.first_patch_token());
}

// --pca: the picture of one image's features (n_patches, width), on the request's fit or its own.
PcaPicture pca_of(const PcaRequest& request, const Matrix& features, int grid_h, int grid_w) {
  const PcaFit fit = request.fit ? *request.fit : fit_image_pca(features, grid_h, grid_w);
  return pca_picture(fit, features, grid_h, grid_w, request.mask);
}

// The shape of an image's token diagnostics on a grid of grid_h × grid_w patches.
TokenShape token_shape(const VitModel& model, int grid_h, int grid_w) {
  return {model.n_layers(), model.n_heads, model.first_patch_token(), grid_h, grid_w, model.patch_size,
          model.first_patch_token() - model.n_registers()};
}

// heads.csv's mass mask: --threshold when given, else DINO's 0.6.
float heads_threshold(const EncoderView& view) { return view.threshold.value_or(0.6f); }

// SigLIP (Pooling::probe) has no class token: its probe's attention over the final tokens
// stands in for the class token's row in every view. a.heads ← [head] (1, n_tokens); the
// rollout ← the probe's row fused as the view fuses heads (1, n_tokens) · the encoder's rollout
// R (n_tokens, n_tokens): where the probe reads, traced back through the layers.
void use_probe_rows(const EncoderView& view, bool rollout_drawn, Attended& a) {
  if (rollout_drawn) {
    const Matrix probe = fuse_heads(a.result.probe_attention, view.fusion);  // (1, n_tokens)
    Matrix row(1, a.rollout.cols());
    gemm_ab(row, probe, a.rollout);  // (1, n_tokens) · (n_tokens, n_tokens) → (1, n_tokens)
    a.rollout = std::move(row);
  }
  a.heads = a.result.probe_attention;
}

// What a forward computes besides the view's maps (every block then runs).
struct AttendExtras {
  bool classify = false;  // the classifier's logits (Attended::result)
  bool diagnose = false;  // the token diagnostics (Attended::tokens)
  bool picture = false;   // --pca's picture (Attended::pca)
};

// The view's maps of x (its layer resolved, drawn_layer) and what `extras` asks for besides;
// report, when given, is told every layer's heads.
Attended attend_steps(const VitModel& model, const ImageTensor& x, const ProcessOptions& options, ReportBuilder* report,
                      const AttendExtras& extras, int grid_h, int grid_w) {
  const EncoderView& view = options.view;
  const int layer = drawn_layer(view);
  const bool rollout_drawn = draws(view, MapMethod::rollout);
  ForwardOptions fo;
  // The logits need every block, and so does the report's page; the maps still come from `layer`.
  // A probe's map needs every block, the final norm and the probe.
  const bool probe = model.pooling == Pooling::probe;
  const bool every_block = extras.classify || extras.diagnose || extras.picture || probe;
  fo.last_layer = every_block ? -1 : report ? model.n_layers() - 1 : layer;
  fo.keep_from_layer = rollout_drawn || report || extras.diagnose ? 0 : layer;
  fo.scale = options.scale;
  if (needs_gradients(view)) fo.tape = &worker_tape();
  // Rollout folds each layer in as it comes, so memory holds one layer's heads, not all.
  AttentionRollout rollout(view.fusion, view.discard_ratio);
  Attended a;
  std::optional<TokenRecorder> recorder;
  if (extras.diagnose) {
    recorder.emplace(token_shape(model, grid_h, grid_w), options.artifact_ratio, heads_threshold(view));
    fo.on_block_output = [&](int l, const Matrix& out) { recorder->add_block_output(l, out); };
  }
  fo.on_attention = [&](int l, const std::vector<Matrix>& layer_heads) {
    if (rollout_drawn && l <= layer) rollout.add_layer(layer_heads);
    if (l == layer) a.heads = layer_heads;
    if (report) report->add_layer(l, layer_heads);
    if (recorder) recorder->add_attention(l, layer_heads);
  };
  a.result = forward(model, x, fo);
  if (rollout_drawn) a.rollout = rollout.result();
  if (probe && report) report->add_probe(a.result.probe_attention);
  if (probe) use_probe_rows(view, rollout_drawn, a);
  if (recorder) a.tokens = recorder->finish();
  // The report's Tokens panel shows the picture too: --pca's, else the image's own fit.
  if (extras.picture) a.pca = pca_of(options.pca.value_or(PcaRequest{}), patch_rows(model, a.result), grid_h, grid_w);
  if (fo.tape) a.relevance = class_maps(model, *fo.tape, a.result.logits, view, options.scale, grid_h, grid_w);
  return a;
}

// "chefer: cougar (287)", "gradcam: class 3", "rollout", "head 2": a map's label on a sheet.
std::string map_title(const MapSlot& slot, const ClassMaps& relevance) {
  if (slot.head >= 0) return "head " + std::to_string(slot.head);
  std::string title = method_name(slot.method);
  if (slot.class_slot < 0) return title;
  const ChosenClass& c = relevance.classes[static_cast<std::size_t>(slot.class_slot)];
  return title + (c.label.empty() ? fmt::format(": class {}", c.index) : fmt::format(": {} ({})", c.label, c.index));
}

// --clean: the tokens flagged at the view's layer, left out of every drawn map.
std::vector<int> tokens_left_out(const Attended& a, const ProcessOptions& options) {
  if (!options.clean || !a.tokens) return {};
  return a.tokens->flagged[static_cast<std::size_t>(drawn_layer(options.view))];
}

// Every map the view draws (map_slots), with its tag and title; with --clean, without the
// flagged tokens (core/token_diagnostics.hpp's without_tokens).
std::vector<NamedMap> named_maps(const VitModel& model, const Attended& a, const ProcessOptions& options, int grid_h,
                                 int grid_w) {
  const EncoderView& view = options.view;
  const std::vector<int> left_out = tokens_left_out(a, options);
  std::vector<NamedMap> maps;
  for (const MapSlot& slot : map_slots(view, model.n_heads)) {
    Matrix map;
    if (slot.head >= 0)
      map = query_token_map(a.heads[static_cast<std::size_t>(slot.head)], query_row(model, view.query),
                            model.first_patch_token(), grid_h, grid_w);
    else if (slot.class_slot >= 0) map = a.relevance.map(static_cast<std::size_t>(slot.class_slot), slot.method);
    else map = encoder_map(model, a.heads, a.rollout, view, slot.method, grid_h, grid_w);
    if (!left_out.empty()) map = without_tokens(map, left_out, model.first_patch_token());
    std::string title = map_title(slot, a.relevance);
    std::string caption = slot.class_slot >= 0 ? title : std::string();
    Matrix pixels = slot.class_slot >= 0 ? a.relevance.pixels(static_cast<std::size_t>(slot.class_slot), slot.method)
                                         : Matrix();
    maps.push_back({slot.tag, std::move(title), std::move(caption), std::move(map), std::move(pixels)});
  }
  return maps;
}

// The maps' values, in their order (what draw_overlays takes).
std::vector<Matrix> values_of(const std::vector<NamedMap>& maps) {
  std::vector<Matrix> values;
  for (const NamedMap& m : maps) values.push_back(m.map);
  return values;
}

// --faithfulness: every map the run draws, named by its method, for its class: a class-specific
// map's own, the top-1 for attention and rollout ("attention_h<h>" per head with --head all).
std::vector<ScoredMap> drawn_maps_to_score(const std::vector<NamedMap>& named, const std::vector<MapSlot>& slots,
                                           const ClassMaps& relevance, const RowVector& logits) {
  const int top1 = top_classes(logits, 1).front().index;
  std::vector<ScoredMap> scored;
  for (std::size_t i = 0; i < named.size() && i < slots.size(); ++i) {
    const MapSlot& slot = slots[i];
    const std::string method = slot.head >= 0 ? fmt::format("attention_h{}", slot.head) : method_name(slot.method);
    const int c = slot.class_slot >= 0 ? relevance.classes[static_cast<std::size_t>(slot.class_slot)].index : top1;
    scored.push_back({method, c, named[i].map});
  }
  return scored;
}

// The core's errors name no file (activations that became non-finite): `source` is the input's.
Attended attend(const VitModel& model, const ImageTensor& x, const ProcessOptions& options, ReportBuilder* report,
                bool classify, int grid_h, int grid_w, const std::string& source) {
  return naming_source(source, [&] {
    return attend_steps(model, x, options, report,
                        {.classify = classify,
                         .diagnose = needs_token_diagnostics(options),
                         .picture = options.pca.has_value() || report},
                        grid_h, grid_w);
  });
}

// How many classes the report page lists: none without a classifier.
int report_class_count(const VitModel& model, const ProcessOptions& options) {
  if (!options.report || !options.report_classes || !model.has_classifier()) return 0;
  return std::min(options.report_classes->k, model.n_classes());
}

// The report's Prompts panel when the classes are texts: every text's probability (the model's
// rule: softmax over the texts, or each one's sigmoid), word bars and text-tower attention.
void add_texts(ReportBuilder& report, const VitModel& model, const ProcessOptions& options, const ForwardResult& result) {
  const WordsRequest& words = *options.words;
  std::vector<double> probabilities(words.texts.size(), 0.0);
  std::vector<std::string> texts;
  for (const ClassScore& c : top_classes(result.logits, model.n_classes(), model.class_probability()))
    if (c.index >= 0 && static_cast<std::size_t>(c.index) < probabilities.size())
      probabilities[static_cast<std::size_t>(c.index)] = c.probability;
  for (std::size_t t = 0; t < words.texts.size(); ++t)
    texts.push_back(options.report_classes->labels.label(static_cast<int>(t)));
  report.add_texts(report_texts(words, texts, probabilities, result.embedding));
}

// The report's class picker: the most likely classes with their probabilities and, for each
// the page keeps, every relevance method's map. One forward records the tape, then one
// backward a class serves every method (relevance_maps). The maps use the layers the run
// draws (--layer bounds them, as it does the attention) and rollout's --discard-ratio.
void add_class_maps(ReportBuilder& report, const VitModel& model, const ImageTensor& x, const ProcessOptions& options,
                    int grid_h, int grid_w) {
  ForwardTape& tape = worker_tape();
  ForwardOptions fo;
  fo.scale = options.scale;
  fo.tape = &tape;
  const ForwardResult result = forward(model, x, fo);
  const std::vector<ClassScore> top =
      top_classes(result.logits, report_class_count(model, options), model.class_probability());
  if (options.words && !options.words->texts.empty()) add_texts(report, model, options, result);
  std::vector<ReportClass> classes;
  for (const ClassScore& c : top) classes.push_back({c.index, options.report_classes->labels.label(c.index), c.probability});
  RelevanceSettings settings;
  settings.last_layer = drawn_layer(options.view);
  settings.discard_ratio = options.view.discard_ratio;
  settings.lrp_gamma_linear = options.view.lrp_gamma_linear;
  settings.lrp_gamma_conv = options.view.lrp_gamma_conv;
  settings.scale = options.scale;
  // LeGrad's layers as the run's --legrad-from (default as its authors' code: the last two;
  // −K on a model of fewer layers: every layer).
  const int from_end = options.view.legrad_from;
  settings.legrad_from = from_end < 0 ? std::max(model.n_layers() + from_end, 0) : from_end;
  // Chefer's first layer as the drawn map's (--first-layer; asked in words, the CLIP notebook's last layer).
  settings.chefer_from = options.view.chefer_from < 0 ? std::max(model.n_layers() + options.view.chefer_from, 0)
                                                      : options.view.chefer_from;
  const bool sigmoid = model.class_probability() == ClassProbability::sigmoid;
  report.add_predictions(classes, fmt::format("Probabilities: {}. The gradients of the class's logit (before the {}) "
                                              "through layers 0…{} (LeGrad: {}…{}, each layer's own logit{}).",
                                              sigmoid ? "each class's sigmoid, on its own" : "the softmax of the logits",
                                              sigmoid ? "sigmoid" : "softmax", settings.last_layer, std::min(settings.legrad_from, settings.last_layer),
                                              settings.last_layer,
                                              settings.chefer_from > 0
                                                  ? fmt::format("; chefer: {}…{}", std::min(settings.chefer_from, settings.last_layer),
                                                                settings.last_layer)
                                                  : std::string()));
  const std::vector<MapMethod> shown = report_methods();
  std::vector<RelevanceMap> methods;
  for (MapMethod m : shown) methods.push_back(relevance_map(m));
  for (int rank = 0; rank < report.classes_kept() && rank < static_cast<int>(top.size()); ++rank) {
    settings.class_index = top[static_cast<std::size_t>(rank)].index;
    const std::vector<Matrix> maps = relevance_maps(model, tape, methods, settings, grid_h, grid_w);
    for (std::size_t m = 0; m < maps.size(); ++m) report.add_relevance(method_name(shown[m]), settings.class_index, maps[m]);
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

// --report: the page's parts that follow the maps: the seeded model's q and k for its
// step-by-step panel and, for a classifier, every class-specific map of its top classes.
// `source` names the input in errors.
void finish_report(ReportBuilder& report, const std::string& source, const ImageTensor& x, const VitModel& model,
                   const ProcessOptions& options, const InputGrid& g) {
  if (model.n_layers() == 1 && model.n_heads == 1) {  // one block, one head
    const QueryKey qk = query_key(model, x);
    report.add_query_key(qk.q, qk.k, options.scale);
  }
  if (report_class_count(model, options) > 0)  // as attend's: the core's errors name no file
    naming_source(source, [&] { add_class_maps(report, model, x, options, g.grid_h, g.grid_w); });
}

// --report's builder for an image on grid g: every layer, the view's layer drawn in full.
ReportBuilder report_builder(const VitModel& model, const ProcessOptions& options, const InputGrid& g) {
  const EncoderView& view = options.view;
  ReportShape shape{model.n_layers(), model.n_heads, model.first_patch_token(), g.grid_h, g.grid_w,
                    model.patch_size, g.input_w, g.input_h, report_class_count(model, options),
                    static_cast<int>(report_methods().size())};
  shape.dist_token = model.has_dist();
  shape.probe = model.pooling == Pooling::probe;
  ReportSettings settings = *options.report;
  settings.start.query = query_row(model, view.query);  // the page opens on the drawn map's row
  return ReportBuilder(shape, drawn_layer(view), settings);
}

// --report's Tokens panel: the diagnostics of the forward that drew the maps, with --clean how
// many tokens it left out of them, and the PCA picture.
void add_token_panel(ReportBuilder& report, const Attended& a, const ProcessOptions& options) {
  if (!a.tokens) return;
  std::optional<std::size_t> left_out;
  if (options.clean) left_out = tokens_left_out(a, options).size();
  report.add_tokens(*a.tokens, heads_threshold(options.view), left_out);
  if (a.pca) report.add_pca(a.pca->rgb);
}

// --save-attention: the drawn layer's heads (_attn.npy; SigLIP: the probe's rows, [H, 1, T]), every drawn map (_cls.npy, or one
// _cls<tag>.npy a map; --head all: one stacked file), lrp's pixels (_pixels<tag>.npy) and, with --threshold, the masks.
void write_saved_maps(const InputJob& job, const std::vector<Matrix>& heads, const std::vector<NamedMap>& named,
                      const std::vector<Matrix>& masks, const EncoderView& view, const InputGrid& g) {
  // (n_tokens, n_tokens) each; SigLIP's probe rows (1, n_tokens)
  const auto rows = static_cast<std::uint64_t>(heads.front().rows()), cols = static_cast<std::uint64_t>(heads.front().cols());
  std::vector<float> all;  // (n_heads, rows, cols); one head: (rows, cols)
  all.reserve(heads.size() * rows * cols);
  for (const Matrix& a : heads) all.insert(all.end(), a.data(), a.data() + a.size());
  const std::vector<std::uint64_t> attn_shape =
      heads.size() > 1 ? std::vector<std::uint64_t>{heads.size(), rows, cols} : std::vector<std::uint64_t>{rows, cols};
  write_npy(with_suffix(job.output_base, attention_values_suffix().c_str()), all.data(), attn_shape);
  const auto grid_h = static_cast<std::uint64_t>(g.grid_h), grid_w = static_cast<std::uint64_t>(g.grid_w);
  const bool per_head = view.head == HeadChoice::all && view.methods == std::vector<MapMethod>{MapMethod::attention};
  if (per_head) {  // one file, (n_heads, grid_h, grid_w)
    std::vector<float> drawn;
    for (const NamedMap& m : named) drawn.insert(drawn.end(), m.map.data(), m.map.data() + m.map.size());
    write_npy(with_suffix(job.output_base, map_values_suffix("").c_str()), drawn.data(), {named.size(), grid_h, grid_w});
  } else {  // each map its file, (grid_h, grid_w): "_cls.npy" alone, else "_cls<tag>.npy"
    for (const NamedMap& m : named) {
      const std::vector<float> values = row_major(m.map);
      write_npy(with_suffix(job.output_base, map_values_suffix(m.tag).c_str()), values.data(), {grid_h, grid_w});
    }
  }
  for (const NamedMap& m : named)  // lrp's values at the pixels, (S_h, S_w)
    if (m.pixels.size() > 0) {
      const std::vector<float> values = row_major(m.pixels);
      write_npy(with_suffix(job.output_base, pixel_values_suffix(m.tag).c_str()), values.data(),
                {static_cast<std::uint64_t>(m.pixels.rows()), static_cast<std::uint64_t>(m.pixels.cols())});
    }
  if (!masks.empty()) write_masks(with_suffix(job.output_base, mask_suffix().c_str()), masks, named.size() > 1 || per_head);
}

// The overlays, each captioned: one as <name>_attn.png, or each under its tag and then the
// labelled sheet of them (uncaptioned: the sheet labels each) as <name>_attn.png, written
// last: when it exists, the others do too.
void write_overlays(const InputJob& job, const std::vector<cv::Mat>& overlays, const std::vector<NamedMap>& named,
                    const ProcessOptions& options) {
  const std::string ext = extension(options.format.format);
  if (overlays.size() == 1) {
    write_image_atomic(with_suffix(job.output_base, overlay_suffix(ext).c_str()), captioned(overlays.front(), named.front()),
                       options.format);
    return;
  }
  for (std::size_t i = 0; i < overlays.size(); ++i)
    write_image_atomic(with_suffix(job.output_base, map_overlay_suffix(named[i].tag, ext).c_str()),
                       captioned(overlays[i], named[i]), options.format);
  write_image_atomic(with_suffix(job.output_base, overlay_suffix(ext).c_str()), map_sheet(overlays, titles_of(named)),
                     options.format);
}

// Writes the job's outputs but its settings record; returns its top classes (with --top and a
// classifier, else none) for on_top, once the record is written too.
std::vector<ClassScore> write_image_outputs(const InputJob& job, const VitModel& model, const ProcessOptions& options) {
  const EncoderView& view = options.view;
  const cv::Mat bgr = load_image(job.input, options.max_pixels, options.damage);  // (H, W) original
  const InputGrid g = input_grid(bgr, model, view);
  const ImageTensor x = preprocess(bgr, g.input_w, g.input_h, model.norm);  // (3, input_h, input_w)
  if (options.on_grid) options.on_grid(job, g);

  std::optional<ReportBuilder> report;  // the page shows every layer: all of them run
  if (options.report) report.emplace(report_builder(model, options, g));
  const bool classify = (options.top || options.faithfulness) && model.has_classifier();
  const bool words = options.save_attention && options.words;  // the image embedding: every block runs
  const Attended attended = attend(model, x, options, report ? &*report : nullptr, classify || words, g.grid_h,
                                   g.grid_w, display(job.input));
  const RowVector& logits = attended.result.logits;
  const std::vector<NamedMap> named = named_maps(model, attended, options, g.grid_h, g.grid_w);
  if (options.clean && options.on_clean)
    options.on_clean(job, drawn_layer(view), tokens_left_out(attended, options).size());

  std::vector<Matrix> masks;  // (grid_h, grid_w) each, with --threshold
  std::vector<Matrix> pixels;
  for (const NamedMap& m : named) pixels.push_back(m.pixels);
  const std::vector<cv::Mat> overlays = draw_overlays(bgr, values_of(named), options, &masks, &pixels);
  if (report) add_token_panel(*report, attended, options);
  if (report) {
    finish_report(*report, display(job.input), x, model, options, g);
    report->write(with_suffix(job.output_base, report_suffix().c_str()), job.input.filename().string(), bgr,
                  named.front().map, model_summary(model));
  }
  if (options.save_attention) write_saved_maps(job, attended.heads, named, masks, view, g);
  if (options.faithfulness && classify)
    write_faithfulness_part(with_suffix(job.output_base, batch_file(&OutputSet::faithfulness).part_suffix), job.input,
                            model, x, drawn_maps_to_score(named, map_slots(view, model.n_heads), attended.relevance, logits),
                            *options.faithfulness, options.scale);
  if (options.heads_csv && attended.tokens)
    write_heads_part(with_suffix(job.output_base, batch_file(&OutputSet::heads).part_suffix), job.input, *attended.tokens);
  if (words)
    write_words_part(with_suffix(job.output_base, words_suffix().c_str()), *options.words, attended.result.embedding);
  if (options.pca && attended.pca)  // before the overlay, which is written last
    write_image_atomic(with_suffix(job.output_base, pca_suffix().c_str()),
                       pca_image(*attended.pca, bgr.size(), options.render.interp));
  std::vector<ClassScore> classes;  // --top: written before the overlay, which is written last
  if (classify && options.top) {
    classes = top_classes(logits, options.top->k, model.class_probability());  // SigLIP's texts: each one's sigmoid
    write_predictions(with_suffix(job.output_base, batch_file(&OutputSet::top).part_suffix), {{job.input, classes}},
                      options.top->labels);
  }
  write_overlays(job, overlays, named, options);
  return classes;
}

}  // namespace

std::vector<NamedMap> image_maps(const cv::Mat& bgr, const VitModel& model, const ProcessOptions& options,
                                 InputGrid* grid, RowVector* logits) {
  const InputGrid g = input_grid(bgr, model, options.view);
  if (grid) *grid = g;
  const ImageTensor x = preprocess(bgr, g.input_w, g.input_h, model.norm);  // (3, input_h, input_w)
  const bool classify = logits && model.has_classifier();
  // A frame's maps: the diagnostics only for --clean (a video gets no page and no heads.csv).
  const Attended attended =
      attend_steps(model, x, options, nullptr, {.classify = classify, .diagnose = options.clean}, g.grid_h, g.grid_w);
  if (classify) *logits = attended.result.logits;
  return named_maps(model, attended, options, g.grid_h, g.grid_w);
}

std::string report_page(const cv::Mat& bgr, const std::string& name, const std::string& source, const VitModel& model,
                        const ProcessOptions& options) {
  if (!options.report) throw Error("report_page: the options ask for no report");
  const InputGrid g = input_grid(bgr, model, options.view);
  const ImageTensor x = preprocess(bgr, g.input_w, g.input_h, model.norm);  // (3, input_h, input_w)
  ReportBuilder report = report_builder(model, options, g);
  const Attended attended = attend(model, x, options, &report, false, g.grid_h, g.grid_w, source);
  const std::vector<NamedMap> named = named_maps(model, attended, options, g.grid_h, g.grid_w);
  add_token_panel(report, attended, options);
  finish_report(report, source, x, model, options, g);
  return report.page_text(name, bgr, named.front().map, model_summary(model));
}

PatchFeatures image_patch_features(const fs::path& input, const VitModel& model, const ProcessOptions& options) {
  const cv::Mat bgr = load_image(input, options.max_pixels, options.damage);  // (H, W); its errors name the input
  const InputGrid g = input_grid(bgr, model, options.view);
  const ImageTensor x = preprocess(bgr, g.input_w, g.input_h, model.norm);  // (3, input_h, input_w)
  ForwardOptions fo;
  fo.scale = options.scale;
  return naming_source(display(input), [&] {  // as attend's: the core's errors name no file
    return PatchFeatures{patch_rows(model, forward(model, x, fo)), g.grid_h, g.grid_w};
  });
}

int pca_feature_width(const VitModel& model) {
  return model.blocks.empty() || model.blocks.back().projected() ? model.d_model() : model.d_attn();
}

bool needs_token_diagnostics(const ProcessOptions& options) {
  return options.report.has_value() || options.clean || options.heads_csv;
}

std::vector<std::string> titles_of(const std::vector<NamedMap>& maps) {
  std::vector<std::string> titles;
  for (const NamedMap& m : maps) titles.push_back(m.title);
  return titles;
}

std::vector<cv::Mat> draw_overlays(const cv::Mat& bgr, const std::vector<Matrix>& maps, const ProcessOptions& options,
                                   std::vector<Matrix>* masks, const std::vector<Matrix>* pixels) {
  std::vector<cv::Mat> overlays;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const bool signed_map = pixels && i < pixels->size() && (*pixels)[i].size() > 0;
    const Matrix& map = maps[i];
    overlays.push_back(signed_map ? render_signed_overlay(bgr, (*pixels)[i], options.render.alpha)
                                  : render_overlay(bgr, map, options.render));
    if (!options.view.threshold) continue;
    // on the probabilities, not the display scale; a signed map's positive part
    const Matrix mask = mass_mask(signed_map ? Matrix(map.cwiseMax(0.0f)) : map, *options.view.threshold);
    draw_mask_outline(overlays.back(), mask);
    if (masks) masks->push_back(mask);
  }
  return overlays;
}

cv::Mat captioned(const cv::Mat& overlay, const NamedMap& map) {
  if (map.caption.empty()) return overlay;
  cv::Mat out = overlay.clone();
  draw_label(out, map.caption);
  return out;
}

cv::Mat map_sheet(const std::vector<cv::Mat>& overlays, const std::vector<std::string>& titles) {
  return tile_images(overlays, titles, 512);
}

OutputSet written_outputs(const VitModel& model, const ProcessOptions& options) {
  OutputSet outputs;
  outputs.image_extension = extension(options.format.format);
  outputs.save_attention = options.save_attention;
  outputs.mask = options.save_attention && options.view.threshold.has_value();
  outputs.report = options.report.has_value();
  outputs.top = options.top.has_value() && model.has_classifier();
  outputs.faithfulness = options.faithfulness.has_value() && model.has_classifier();
  outputs.heads = options.heads_csv;
  outputs.pca = options.pca.has_value();
  outputs.words = options.save_attention && options.words;
  outputs.settings = options.settings;
  // One overlay per head, beside the sheet, when all heads are drawn and there is more than one;
  // one per map when several methods or classes are.
  const std::vector<MapSlot> slots = map_slots(options.view, model.n_heads);
  if (slots.size() > 1 && slots.front().head >= 0) outputs.head_overlays = static_cast<int>(slots.size());
  else if (slots.size() > 1)
    for (const MapSlot& slot : slots) outputs.map_tags.push_back(slot.tag);
  if (options.save_attention)
    for (const MapSlot& slot : slots)
      if (slot.head < 0 && slot.method == MapMethod::lrp) outputs.pixel_tags.push_back(slots.size() > 1 ? slot.tag : "");
  return outputs;
}

ProcessOptions checked_options(const VitModel& model, const ProcessOptions& options) {
  ProcessOptions checked = options;
  checked.view.layer = check_view(model, options.view, "the model");
  return checked;
}

void process_image(const fs::path& out_dir, const InputJob& job, const VitModel& model, const ProcessOptions& asked,
                   const OutputSet& outputs) {
  const ProcessOptions options = checked_options(model, asked);
  prepare_output_path(out_dir, job, outputs);  // the folders, and no symlink in the output tree followed
  std::vector<ClassScore> classes;
  commit_job(job, outputs, [&] { classes = write_image_outputs(job, model, options); });
  if (!classes.empty() && options.on_top) options.on_top(job, std::move(classes));
}

}  // namespace vitattn::pipeline
