#pragma once
// One image, start to finish: decode → preprocess → attention → overlay (+ .npy) on disk.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batch_plan.hpp"
#include "faithfulness_part.hpp"
#include "predictions.hpp"
#include "image/image_loader.hpp"
#include "pca_fit.hpp"
#include "view.hpp"
#include "words_part.hpp"
#include "core/vit.hpp"
#include "image/image_writer.hpp"
#include "image/overlay.hpp"
#include "report/report_page.hpp"

namespace vitattn::pipeline {

using image::DamagePolicy;
using image::OutputFormat;
using image::RenderOptions;

// The patch grid an image went through: after --img-size and --keep-aspect, for -v.
struct InputGrid {
  int image_w = 0, image_h = 0;  // the decoded image
  int input_w = 0, input_h = 0;  // the model input it was resized to
  int grid_w = 0, grid_h = 0;    // patches
};

// --top: each image's k most likely classes, named by `labels`.
struct TopRequest {
  int k = 0;
  model::ClassLabels labels;
};

struct ProcessOptions {
  RenderOptions render;
  OutputFormat format;          // the overlays' file format (PNG by default)
  bool scale = true;            // 1/√d_k
  bool save_attention = false;  // also write _attn.npy and _cls.npy (and _mask.npy with a threshold)
  std::uint64_t max_pixels = 100'000'000;
  DamagePolicy damage;          // an image the decoder had to patch up: warn, or fail with --strict
  EncoderView view;
  std::optional<report::ReportSettings> report;  // also write <name>_report.html, the interactive page
  // With report and a model with a classifier: the page lists the k most likely classes, named
  // by labels, with every gradient method's map of each (core/relevance.hpp).
  std::optional<TopRequest> report_classes;
  std::function<void(const InputJob&, const InputGrid&)> on_grid;  // told each image's grid, when set
  // When set, a model with a classifier runs every block, and each image's top.k classes are
  // written as its part of predictions.csv (<name>_predictions.csv, before the overlay) and
  // handed to on_top, when set, once the image's outputs (its settings record too) are written.
  std::optional<TopRequest> top;
  std::function<void(const InputJob&, std::vector<ClassScore> classes)> on_top;
  // When set, a model with a classifier runs every block, and each image's drawn maps are scored
  // for the class each is drawn for (a class-specific map's own, --class's or the top-1;
  // attention and rollout for the top-1), beside the random baseline for each of those classes
  // (faithfulness_part.hpp), written as its part of faithfulness.csv (<name>_faithfulness.csv,
  // before the overlay).
  std::optional<FaithfulnessRequest> faithfulness;
  // The token diagnostics (core/token_diagnostics.hpp): every layer's token norms, the
  // artifacts they flag, sinks, the register share and per-head statistics. Made, from the
  // same forward that draws the maps (every block then runs), when the report, clean or
  // heads_csv asks for them.
  float artifact_ratio = 3.0f;  // a patch token is flagged above this × its layer's median patch norm
  bool clean = false;           // the drawn maps leave out the tokens flagged at the view's layer
  bool heads_csv = false;       // <name>_heads.csv, the image's part of heads.csv
  // With clean, told each image's layer and how many of its tokens were left out, when set.
  std::function<void(const InputJob&, int layer, std::size_t left_out)> on_clean;
  // --pca: <name>_pca.png, the first three principal components of the last layer's patch
  // features (every block then runs; core/pca.hpp, pca_fit.hpp). Images only.
  std::optional<PcaRequest> pca;
  // With save_attention and texts as the classes: each image's <name>_words.csv, every text's
  // words' relevance for its embedding (words_part.hpp; every block then runs). Made once per
  // run and shared by the jobs. Images only.
  std::shared_ptr<const WordsRequest> words;
  // The settings record each job writes last, as <name>_settings.txt (OutputSet::settings,
  // job_record.hpp); empty: none.
  std::string settings;
};

// True when the options ask for the token diagnostics (ProcessOptions says which ask).
bool needs_token_diagnostics(const ProcessOptions& options);

// `options` with its view checked against `model` (check_view, naming it "the model") and
// its layer resolved: what process_image and process_video draw from, and what image_maps and
// report_page take (their callers check: serve's map_options resolves its view's layer too).
ProcessOptions checked_options(const VitModel& model, const ProcessOptions& options);

// Throws Error with a one-line message naming the input (or the output it could not write),
// Error with a Subject when a choice does not fit this image. Makes the job's output folders (through
// prepare_output_path, output_folders.hpp) below `out_dir` and writes
// output_paths(job.output_base, outputs), no other file, as one commit (job_record.hpp: the
// settings record last; after a failure none of them is left). `options.view` must have passed
// check_view for `model`, and `outputs` be written_outputs(model, options): both once for a
// whole batch (prepare_outputs, run_batch.hpp), not per image.
void process_image(const std::filesystem::path& out_dir, const InputJob& job, const VitModel& model,
                   const ProcessOptions& options, const OutputSet& outputs);

// One map an image gets (map_slots, view.hpp), and its names.
struct NamedMap {
  std::string tag;    // its files' tag (job_outputs.hpp): "" when the image gets one map
  std::string title;  // its label on the sheet of several: "head 3", "rollout", "chefer: cougar (287)"
  // What its own overlay says on it (captioned): a class-specific map's title, which class it
  // shows (the name of a lone overlay does not); empty for the maps of every class.
  std::string caption;
  Matrix map;         // (grid_h, grid_w), before display scaling
  Matrix pixels;      // (S_h, S_w) its values at the model's input pixels (lrp's); empty for the others
};

// The steps of process_image after decoding, for callers that decode themselves (a video's
// frames, process_video.hpp): the same functions, so a frame's map is the image path's.
// bgr (H, W) 8-bit → the maps to draw, (grid_h, grid_w) each: one, one per head with --head
// all, or one per method and class. `grid`, when given, is told the input's grid. `logits`,
// when given and the model has a classifier, receives its logits (1, n_classes) from the same
// forward (every block then runs), as process_image's --top reads them. options.view: checked,
// its layer resolved (checked_options); an unresolved layer throws Error (drawn_layer).
std::vector<NamedMap> image_maps(const cv::Mat& bgr, const VitModel& model, const ProcessOptions& options,
                                 InputGrid* grid = nullptr, RowVector* logits = nullptr);
// The page process_image writes as <name>_report.html (options.report must be set), for an
// image already decoded (bgr (H, W) 8-bit), as bytes: the same steps, from one place. name:
// the file name the page shows; source: the input as errors name it. options.view: as image_maps'.
std::string report_page(const cv::Mat& bgr, const std::string& name, const std::string& source, const VitModel& model,
                        const ProcessOptions& options);
// The maps' titles, in their order.
std::vector<std::string> titles_of(const std::vector<NamedMap>& maps);
// The maps blended over bgr (H, W), each with its --threshold outline; `masks` (grid_h, grid_w)
// each, when given, receives the outlined masks. `pixels`, when given, holds each map's values at
// the pixels (empty for most): such a map is signed (lrp's), drawn with a diverging colour map
// (image::render_signed_overlay) and outlined on its positive part.
std::vector<cv::Mat> draw_overlays(const cv::Mat& bgr, const std::vector<Matrix>& maps, const ProcessOptions& options,
                                   std::vector<Matrix>* masks = nullptr, const std::vector<Matrix>* pixels = nullptr);
// `overlay`, one of draw_overlays' for `map`, with the map's caption written on it (the sheet's
// labelling, image::draw_label); as it is without a caption. An image's overlay file, a video's
// frame of one map and serve's PNG answer all carry it.
cv::Mat captioned(const cv::Mat& overlay, const NamedMap& map);
// The sheet of several maps' overlays (--head all, --method all, --class a,b), each labelled
// with its title.
cv::Mat map_sheet(const std::vector<cv::Mat>& overlays, const std::vector<std::string>& titles);

// An image's patch features for a batch PCA fit: the last layer's patch tokens after the final
// norm, (grid_h·grid_w, width), from the same decoding, grid and forward as process_image.
// Throws Error naming the input.
struct PatchFeatures {
  Matrix features;  // (grid_h·grid_w, width)
  int grid_h = 0, grid_w = 0;
};
PatchFeatures image_patch_features(const std::filesystem::path& input, const VitModel& model,
                                   const ProcessOptions& options);

// The width of the features --pca reads: d_model, or d_attn after an unprojected last block.
int pca_feature_width(const VitModel& model);

// Which outputs process_image writes for each job with these options: keep in step with it.
OutputSet written_outputs(const VitModel& model, const ProcessOptions& options);

}  // namespace vitattn::pipeline
