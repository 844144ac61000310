#include "image_request.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/text_relevance.hpp"
#include "core/vit_head.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"
#include "hub/hf_cache.hpp"
#include "model/single_head_layout.hpp"
#include "model_request.hpp"
#include "pipeline/class_choice.hpp"
#include "pipeline/output_guard.hpp"
#include "pipeline/report_start.hpp"
#include "pipeline/view.hpp"
#include "pipeline/words_part.hpp"
#include "pipeline/zero_shot_texts.hpp"
#include "scale_out.hpp"
#include "settings_record.hpp"
#include "text_prompts.hpp"
#include "top_classes.hpp"

namespace vitattn::cli {
namespace {

// The colormap's name as the page lists it ("jet"): the typed option holds OpenCV's number.
std::string colormap_name(int colormap) {
  for (const std::string& name : image::colormap_names())
    if (image::colormap_by_name(name) == colormap) return files::lower_case(name);
  return "jet";
}

// --report: the page starts from the run's own view (pipeline::report_start), rollout's discard
// ratio, threshold and colours.
report::ReportSettings report_settings(const ImageOptions& o, const pipeline::EncoderView& view) {
  report::ReportSettings r;
  r.max_mb = o.report_max_mb;
  r.precision = o.report_precision;
  r.start = pipeline::report_start(view);
  r.start.discard_ratio = static_cast<float>(o.discard_ratio);
  if (o.threshold) r.start.threshold = static_cast<float>(*o.threshold);
  r.start.alpha = o.render.alpha;
  r.start.colormap = colormap_name(o.render.colormap);
  r.start.smooth = o.render.interp != image::Interp::nearest;
  return r;
}

bool asks_in_words(const ImageOptions& o) { return !o.texts.empty() || !o.texts_from.empty(); }

pipeline::ProcessOptions process_options(const ImageOptions& o) {
  pipeline::ProcessOptions p;
  p.render = o.render;
  p.format = o.format;
  p.scale = !o.no_scale;
  p.save_attention = o.save_attention;
  p.max_pixels = o.max_pixels;
  p.damage.strict = o.strict;
  pipeline::EncoderView& v = p.view;
  v.layer = o.layer;
  v.methods = chosen_methods(o, true);  // "all": narrowed to the model's in choose_maps
  v.legrad_from = o.first_layer.value_or(o.legrad_from);
  v.chefer_from = o.first_layer.value_or(asks_in_words(o) ? pipeline::kTextsCheferFrom : 0);  // the CLIP notebook's start, else the paper's
  v.discard_ratio = static_cast<float>(o.discard_ratio);
  v.lrp_gamma_linear = static_cast<float>(o.lrp_gamma_linear);
  v.lrp_gamma_conv = static_cast<float>(o.lrp_gamma_conv);
  if (o.threshold) v.threshold = static_cast<float>(*o.threshold);
  v.img_size = o.model.img_size_given && !o.model.file.empty() ? o.model.shape.img_size : 0;  // the seeded model is made at that size
  v.keep_aspect = o.keep_aspect;
  v.head = o.head.choice;
  v.head_index = o.head.index;
  v.fusion = o.head.fusion;
  v.query = o.query;
  if (o.report) p.report = report_settings(o, v);
  if (o.faithfulness) p.faithfulness = pipeline::FaithfulnessRequest{o.faithfulness_steps};
  p.artifact_ratio = static_cast<float>(o.artifact_ratio);
  p.clean = o.clean;
  p.heads_csv = o.heads_csv || o.save_attention;
  if (o.pca) {
    p.pca.emplace();  // the fit: chosen by the pipeline (BatchRequest::pca_fit)
    if (o.pca_mask) p.pca->mask = static_cast<float>(*o.pca_mask);
  }
  return p;
}

pipeline::VideoOptions video_options(const ImageOptions& o) {
  pipeline::VideoOptions v;
  v.frames_dir = o.frames_dir;
  v.every = o.every;
  v.max_frames = o.max_frames;
  if (o.smooth) v.smooth = static_cast<float>(*o.smooth);
  return v;
}

// -v: the patch grid the images go through, once; per image with --keep-aspect.
void log_grid(const ImageOptions& o, const VitModel& model, pipeline::ProcessOptions& options) {
  if (o.verbosity < 1) return;
  const int p = model.patch_size;
  const SeededShape& shape = o.model.shape;
  const bool file = !o.model.file.empty();  // the seeded model is made at --img-size: that is its own grid
  if (o.keep_aspect) {
    const int s = file && o.model.img_size_given ? shape.img_size : model.grid_h * p;
    spdlog::debug("grid per image (--keep-aspect): shorter side {} px = {} of {} px", s,
                  files::counted(static_cast<std::size_t>(s / p), "patch", "patches"), p);
    options.on_grid = [](const pipeline::InputJob& job, const pipeline::InputGrid& g) {
      spdlog::debug("{}: {}x{} image, input {}x{}, grid {}x{}", files::display(job.input), g.image_w, g.image_h, g.input_w,
                    g.input_h, g.grid_w, g.grid_h);
    };
  } else if (file && o.model.img_size_given) {
    const int g = shape.img_size / p;
    spdlog::debug("grid {0}x{0} patches of {1} px (input {2}x{2}, --img-size); the checkpoint's own grid is {3}x{4}", g, p,
                  shape.img_size, model.grid_w, model.grid_h);
  } else {
    spdlog::debug("grid {}x{} patches of {} px (input {}x{}{})", model.grid_w, model.grid_h, p, model.grid_w * p,
                  model.grid_h * p, file ? ", the checkpoint's own" : "");
  }
}

// Fewer patches than this a side and a map is a few cells, which say little about where the
// model looks (a 1×1 grid is one cell): drawn, but said.
constexpr int kUsefulGridSide = 4;

// --img-size on a checkpoint that leaves a grid (its shorter side, with --keep-aspect) below
// kUsefulGridSide patches: one warning naming the grid and the size that gives a useful one.
void warn_small_grid(const ImageOptions& o, const VitModel& model) {
  if (o.model.file.empty() || !o.model.img_size_given) return;  // the seeded model is made at --img-size
  const int p = model.patch_size, side = o.model.shape.img_size / p;
  if (side >= kUsefulGridSide) return;
  const std::string grid =
      o.keep_aspect ? fmt::format("a shorter side of {}", files::counted(static_cast<std::size_t>(side), "patch", "patches"))
                    : fmt::format("a {0}x{0} grid", side);
  const int own = model.grid_h * p;  // a RoPE model's default input
  spdlog::warn("--img-size {}: {} px patches make {}, too few for a map; give --img-size {} or more{}",
               o.model.shape.img_size, p, grid, kUsefulGridSide * p,
               own >= kUsefulGridSide * p ? fmt::format(" (the model's own input is {} px)", own) : std::string());
}

// --text and --texts-from: the texts through the text tower become the model's classes (its
// zero-shot head, core/zero_shot.hpp) and their names, before any image. Returns their ids.
std::vector<std::vector<std::int32_t>> texts_as_classes(const ImageOptions& o, model::OpenedModel& opened,
                                                        const std::string& model_name) {
  const std::string flag = o.texts.empty() ? "--texts-from" : "--text";
  const std::vector<std::string> texts = prompt_texts(o.texts, o.texts_from);
  const auto ids = text_id_rows(opened, texts, o.truncate, flag);
  check_embedding_widths(opened, flag, model_name);
  opened.model.zero_shot =
      pipeline::zero_shot_head(opened.text.tower, ids, legrad_empty_prompt_ids(opened, !o.no_legrad_correction));
  opened.labels = model::ClassLabels{texts, flag};
  spdlog::debug("{}: {} as the classes", flag, files::counted(texts.size(), "text", "texts"));
  return ids;
}

// --save-attention or --report with texts: each image's <name>_words.csv and the report's word bars
// (pipeline/words_part.hpp; `view`: the report's text attention tokens, or none), from `tower`
// (the request's, which outlives the batch). The start layer is the CLIP notebook's (the last
// layer alone) unless --first-layer names one, as it does for the image's maps.
std::shared_ptr<const pipeline::WordsRequest> words_request(const ImageOptions& o, const TextTower& tower,
                                                            const std::vector<std::vector<std::int32_t>>& ids,
                                                            const std::vector<std::vector<std::string>>& tokens,
                                                            const std::vector<std::vector<std::string>>& view) {
  int start = -1;
  try {
    start = text_start_layer(o.first_layer.value_or(-1), tower.n_layers());
  } catch (const Error& e) {
    throw Error(fmt::format("--first-layer {}: {}", *o.first_layer, e.what()));
  }
  return std::make_shared<const pipeline::WordsRequest>(
      pipeline::text_words(tower, ids, tokens, start, view));
}

// --labels (and --templates): the prompt ensemble's class embeddings (from the cache when it has
// them) become the model's classes, named by the labels, before any image; the files they came
// from are the batch's reads (the output guard's).
void labels_as_classes(const ImageOptions& o, model::OpenedModel& opened, const std::string& model_name,
                       pipeline::BatchRequest& b) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::optional<ZeroShotClasses> classes = zero_shot_classes(o.classes_from_words, opened, model_name, threads);
  if (!classes) return;
  check_embedding_widths(opened, "--labels", model_name);
  const pipeline::ClassEmbeddings encoded = encode_zero_shot_classes(opened.text.tower, *classes);
  opened.model.zero_shot = pipeline::zero_shot_head(opened.text.tower, encoded.embeddings,
                                                    legrad_empty_prompt_ids(opened, !o.no_legrad_correction));
  opened.labels = model::ClassLabels{classes->labels, "--labels"};
  for (const std::string& f : classes->files) b.reads.emplace_back(f, pipeline::roles::class_list);
}

// --method all narrowed to what the model allows (no class-specific method without a
// classifier), and --class resolved against the classifier's classes and names.
void choose_maps(const ImageOptions& o, const VitModel& model, const model::ClassLabels& labels, const std::string& model_name,
                    pipeline::EncoderView& view) {
  view.methods = chosen_methods(o, model.has_classifier());
  if (!o.classes.empty() && !model.has_classifier()) {  // a class-specific method names itself in check_view; --method all comes here
    pipeline::check_view(model, view, model_name);
    throw Error(fmt::format("--class: {} has no classifier, so no classes{}", model_name, no_classifier_note(model)));
  }
  if (asks_in_words(o)) {
    check_text_classes(o.classes);
    view.class_source = pipeline::ClassSource::texts;
    // every text is drawn, in the order given, unless --class picks some
    if (o.classes.empty())
      for (int i = 0; i < model.n_classes(); ++i) view.classes.push_back({i, labels.label(i)});
  }
  if (!o.classes.empty()) view.classes = pipeline::resolve_classes(o.classes, labels, model.n_classes(), model_name);
  view.class_names = labels.names;
  if (o.method.all && !model.has_classifier())
    spdlog::info("--method all: {} has no classifier; drawing attention and rollout", model_name);
}

// --pca-fit image | batch | FILE, as the pipeline takes it.
pipeline::PcaFitChoice pca_fit_choice(const ImageOptions& o) {
  using Kind = pipeline::PcaFitChoice::Kind;
  if (o.pca_fit == "image") return {Kind::image, {}};
  if (o.pca_fit == "batch") return {Kind::batch, {}};
  return {Kind::file, o.pca_fit};
}

// What the batch reads and writes beside its inputs and outputs, for the output guard: the
// model file (not a hub model: its cache is not the user's), the log, the saved model.
void guarded_files(const ImageOptions& o, pipeline::BatchRequest& b) {
  if (!o.model.file.empty() && !hub::is_hf_model(o.model.file)) b.reads.emplace_back(o.model.file, pipeline::roles::model_file);
  if (!o.scale_out.log_json.empty() && o.scale_out.log_json != "-")
    b.writes.push_back({o.scale_out.log_json, pipeline::roles::log, files::FileKind::json_lines});
  if (!o.save_model.empty()) b.writes.push_back({o.save_model, model::roles::saved_model, files::FileKind::safetensors});
}

}  // namespace

void build_image_request(const ImageOptions& o, ImageRequest& r) {
  pipeline::BatchRequest& b = r.batch;
  b.shard = resolve_shard(o.scale_out);  // before the model: a wrong environment fails at once
  // The class names: --top's, --class's, the report's class picker, and the titles of a sheet of class-specific maps.
  const std::vector<pipeline::MapMethod> methods = chosen_methods(o, true);
  const bool class_specific = std::any_of(methods.begin(), methods.end(), pipeline::class_specific);
  const bool labels = !o.classes_from_words.labels.empty();
  model::OpenedModel opened =
      open_requested_model(o.model, o.verbosity, o.top > 0 || o.report || class_specific, asks_in_words(o) || labels);
  const std::string model_name = o.model.file.empty() ? "the seeded model" : o.model.file;
  std::vector<std::vector<std::int32_t>> text_ids;
  if (asks_in_words(o)) text_ids = texts_as_classes(o, opened, model_name);
  if (labels) labels_as_classes(o, opened, model_name, b);
  r.model = std::move(opened.model);
  r.labels = std::move(opened.labels);
  b.model = &r.model;
  check_classifier(o, r.model);
  warn_top_above_classes(o, r.model);
  pipeline::ProcessOptions& p = b.process;
  p = process_options(o);
  choose_maps(o, r.model, r.labels, model_name, p.view);
  pipeline::check_view(r.model, p.view, model_name);
  // after the view: --first-layer is the image's first. words.csv's, and the report's word bars and text attention.
  if ((o.save_attention || o.report) && !text_ids.empty()) {
    const std::vector<std::vector<std::string>> tokens = word_token_texts(opened, text_ids);
    const std::vector<std::vector<std::string>> view =
        o.report ? prompt_token_texts(opened, text_ids) : std::vector<std::vector<std::string>>{};
    r.text_tower = std::move(opened.text.tower);
    p.words = words_request(o, r.text_tower, text_ids, tokens, view);
  }
  warn_small_grid(o, r.model);
  log_grid(o, r.model, p);
  if (o.clean && o.verbosity >= 1)
    p.on_clean = [](const pipeline::InputJob& job, int layer, std::size_t left_out) {
      spdlog::debug("{}: --clean left out {} at layer {}", files::display(job.input),
                    files::counted(left_out, "flagged token", "flagged tokens"), layer);
    };
  if (o.top > 0) p.top = pipeline::TopRequest{o.top, r.labels};
  // --report's class picker: --top's classes, else the pipeline's few most likely.
  // Asked in words, the picker lists every text (the Prompts panel ranks them all).
  const std::optional<int> picker = o.top > 0            ? std::optional(o.top)
                                    : !text_ids.empty() ? std::optional(static_cast<int>(text_ids.size()))
                                                        : std::nullopt;
  if (o.report) p.report_classes = pipeline::report_class_picker(picker, r.labels);
  if (o.report && o.top > 10 && r.model.has_classifier())
    spdlog::warn("--report --top {}: each page holds the class-specific maps of {} classes, one backward pass a class",
                 o.top, std::min(o.top, r.model.n_classes()));
  b.draw = !o.inputs.empty() || !o.scale_out.files_from.empty();
  // Each job's record of what made its outputs (settings_record.hpp): a batch's only.
  if (b.draw) p.settings = settings_record(o.recorded, opened.file.empty() ? std::nullopt : std::optional(opened.file));
  b.video = video_options(o);
  if (b.draw) b.inputs = batch_inputs(o.inputs, o.scale_out);
  b.output = o.output;
  b.recursive = o.recursive;
  b.jobs = o.jobs;
  b.skip_existing = o.skip_existing;
  b.saved_model = o.save_model;
  if (o.pca) b.pca_fit = pca_fit_choice(o);
  guarded_files(o, b);
}

}  // namespace vitattn::cli
