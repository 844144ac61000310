#pragma once
// The interactive report of one image, <name>_report.html: one self-contained page holding
// the image, every layer's attention (8 bits per weight with a per-row scale, or fp16), the
// per-head statistics, and the page's own script and styles (src/report/, embedded at build
// time). The page draws any token's row or column, any layer and head or fusion, rollout.
// For a model with a classifier it also holds the most likely classes with their
// probabilities and, for each, every gradient method's relevance map (core/relevance.hpp),
// stored as the attention is; a method and a class picker choose the map drawn.
// With the token diagnostics (core/token_diagnostics.hpp) it also holds the Tokens panel:
// every layer's token norms with the flagged artifacts, the sink scores, the register share,
// the per-head table and, when given, the PCA picture of the last layer's patch features.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/tensor.hpp"
#include "core/token_diagnostics.hpp"

namespace vitattn::report {

// What the page shows first: the run's own choices.
struct ReportStart {
  int layer = -1;              // negative counts from the end
  std::string head = "mean";   // a head index, or mean | max | min
  bool rollout = false;
  float discard_ratio = 0.0f;
  std::optional<float> threshold;
  double alpha = 0.5;
  std::string colormap = "jet";
  bool smooth = true;          // bilinear upsampling of the map; false: nearest (the patch grid)
  std::string method;  // the map the page opens on: attention or a relevance method it holds (chefer, …), named by
                       // the caller (pipeline/map_methods.hpp); rollout: the flag above
  int class_index = -1;        // the class of the relevance maps; −1 or one without maps: the most likely
  int query = 0;               // the query token the page starts on (1: the distillation token)
};

// How the page stores each attention weight a (0 ≤ a ≤ s, s the row's largest weight).
enum class ReportPrecision {
  u8,   // round(a/s·255) and s per row: 1 byte a weight, error ≤ s/510
  f16,  // IEEE half precision, rounded to nearest: 2 bytes a weight, error ≤ a·2⁻¹¹
};

struct ReportSettings {
  double max_mb = 16.0;  // budget of the attention data in the page, in 10⁶ bytes
  ReportPrecision precision = ReportPrecision::u8;
  ReportStart start;
};

// The tokens and grid of one image's attention.
struct ReportShape {
  int layers = 1, heads = 1;
  int first_patch = 1;          // 1 + registers
  int grid_h = 0, grid_w = 0;
  int patch_size = 16;
  int input_w = 0, input_h = 0; // the model input, pixels
  int classes = 0;              // the classes the page offers relevance maps of (0: no classifier, no picker)
  int class_methods = 0;        // relevance maps per class
  bool dist_token = false;      // token 1 is distilled DeiT's distillation token (first_patch counts it)
  bool probe = false;           // the model pools with a probe (SigLIP): the page holds its attention too
  int tokens() const { return first_patch + grid_h * grid_w; }
};

// One of the classes the page lists: a row of the classifier, its name, its softmax probability.
struct ReportClass {
  int index = 0;
  std::string label;
  double probability = 0.0;
};

// One text of a model asked in words (its classes are texts): what the page's Prompts panel
// shows of it beside its maps (which are the class picker's, the text being the class).
struct ReportPrompt {
  std::string text;
  double probability = 0.0;             // the ranking's: softmax over the texts (CLIP) or the sigmoid (SigLIP)
  std::vector<std::string> words;       // the word positions' token texts (words.csv's token column)
  std::vector<float> relevance;         // each word's relevance to this image's logit (words.csv's)
  int first_word = 1;                   // words[0]'s position in the token row
  // The text tower's attention cropped to positions 0 … n−1 (the start token if any, the words,
  // the end token): tokens (n) their texts, attention [layer][head][query][key] row-major.
  std::vector<std::string> tokens;
  std::vector<float> attention;
};

// The text side of a page whose classes are texts (ReportShape::classes counts them).
struct ReportTexts {
  bool causal = true;                   // CLIP's mask (query i sees keys 0 … i); false: SigLIP, no mask
  std::string probability = "softmax";  // "softmax" over the texts, or "sigmoid" of each
  int layers = 0, heads = 0;            // the text tower's
  int relevance_from = 0;               // the words' relevance: the rollout's first text layer
  std::vector<ReportPrompt> prompts;    // in the order given (class index = position here)
};

// Collects one image's attention layer by layer as the forward pass hands it over, keeping
// only what goes in the page (quantised at once), then writes the page.
class ReportBuilder {
 public:
  // full_layer: the drawn layer, whose full matrices are always kept. The budget,
  // settings.max_mb, counts the attention and the shape.classes × shape.class_methods
  // relevance maps. When they are over it, what goes first is the full matrices: every layer
  // but the drawn one keeps its class-token rows only (the bulk of the page: T times less).
  // When still over, the relevance maps of the least likely classes go, one class at a time;
  // the most likely class keeps its maps, and the drawn layer its full matrices, even if they
  // alone are over.
  ReportBuilder(const ReportShape& shape, int full_layer, const ReportSettings& settings);

  // heads H × (T, T) softmax rows of `layer`, layers in any order.
  void add_layer(int layer, const std::vector<Matrix>& heads);

  // heads H × (1, T): the pooling probe's attention over the last layer's output tokens
  // (shape.probe models only), stored as the attention rows are. The page offers it as a query
  // of the last layer and opens on it: such a model has no class token, and the probe is what
  // reads the image. Not counted in settings.max_mb: H·T bytes.
  void add_probe(const std::vector<Matrix>& heads);

  // The single head's q and k (T, d_k) each, for the page's step-by-step panel.
  void add_query_key(const Matrix& q, const Matrix& k, bool scale);

  // The classes the page lists, most likely first (at most shape.classes), and one line on
  // what their maps are (the layers and target used).
  void add_predictions(const std::vector<ReportClass>& classes, const std::string& about);

  // The texts the classes are (every one, in their order): the Prompts panel with each text's
  // probability, word bars and text-tower attention. Throws Error when a prompt's sizes do not
  // fit (tokens² · layers · heads attention values, one relevance a word). Not counted in
  // settings.max_mb: the attention is cropped to the prompt's own tokens.
  void add_texts(ReportTexts texts);

  // How many of the most likely classes keep their relevance maps within the budget (≥ 1
  // when shape.classes is): the maps of the others need not be computed.
  int classes_kept() const { return classes_kept_; }

  // map (grid_h, grid_w): `method`'s map for class_index, kept as its positive part (the values
  // of every method but lrp are ≥ 0 already; lrp's signed map shows on the page as its overlay's
  // mass outline reads it: the evidence for the class, not against it), for
  // one of add_predictions' first classes_kept(). Stored as the attention rows are, one scale
  // per map: u8, round(m/s·255) with s = max(m), error ≤ s/510; f16, the half of m/s, error
  // ≤ s·2⁻¹¹.
  void add_relevance(const std::string& method, int class_index, const Matrix& map);

  // The Tokens panel's numbers, from the forward that drew the maps: tokens' shape must be the
  // page's (layers, heads, registers, grid). mask_threshold: the fraction HeadStats::mask_share
  // was made at (the page says it). left_out_by_clean: with --clean, how many tokens it left out
  // of the drawn map (the flagged ones of the drawn layer); none without --clean. Not counted in
  // settings.max_mb: 2·L·T floats and 4·L·H numbers, next to the attention's H·L·T² bytes.
  void add_tokens(const TokenDiagnostics& tokens, float mask_threshold, std::optional<std::size_t> left_out_by_clean);

  // rgb (grid_h·grid_w·3) bytes, row-major over the patch grid, R G B a patch: the first three
  // principal components of the last layer's patch features, each scaled to 0…255 (made by
  // the PCA step, not here). Shown in the Tokens panel; throws Error on another size.
  void add_pca(std::vector<std::uint8_t> rgb);

  // The page's bytes. name: the image's file name, shown as its title. bgr: the decoded image;
  // drawn_map (grid_h, grid_w): the map of the overlay, for the gallery's entropy; model: one line.
  std::string page_text(const std::string& name, const cv::Mat& bgr, const Matrix& drawn_map,
                        const std::string& model) const;

  // page_text written to `page` (temporary file, then rename).
  void write(const std::filesystem::path& page, const std::string& name, const cv::Mat& bgr, const Matrix& drawn_map,
             const std::string& model) const;

  bool keeps_every_layer() const { return full_layers_ == shape_.layers; }

  // One relevance map as the page stores it.
  struct RelevanceMap {
    std::string method;
    int class_index = 0;
    float scale = 0;                // s, the map's largest value
    std::vector<std::uint8_t> q8;   // u8: (grid_h·grid_w) round(m / s · 255)
    std::vector<std::uint16_t> f16; // f16: (grid_h·grid_w) half-precision bits of m / s
  };

 private:
  std::string budget_note() const;  // what the page says when the full matrices are over the budget
  double relevance_mb(int classes) const;  // the relevance maps of that many classes
  std::vector<ReportClass> classes_;
  std::optional<ReportTexts> texts_;  // add_texts
  std::string classes_about_;
  std::vector<RelevanceMap> relevance_;
  int classes_kept_ = 0;
  struct Layer {
    int rows = 0;                   // T (full matrices) or 1 (class-token rows); 0: not added
    std::vector<std::uint8_t> q8;   // u8: (H, rows, T): round(a / s · 255)
    std::vector<float> scale;       // u8: (H, rows): s, the row's largest weight
    std::vector<std::uint16_t> f16; // f16: (H, rows, T) half-precision bits
  };
  ReportShape shape_;
  ReportSettings settings_;
  int full_layer_;
  int full_layers_ = 0;             // how many layers keep full matrices: every one, or 1 (full_layer_)
  double full_mb_ = 0;              // what every layer's full matrices would take
  std::vector<Layer> layers_;
  Layer probe_;                     // add_probe: rows 1
  std::vector<std::vector<double>> entropy_, distance_;  // [layer][head]
  Matrix distances_;                // (n_patches, n_patches) pixels
  float largest_scale_ = 0;
  std::optional<TokenDiagnostics> tokens_;  // add_tokens
  float mask_threshold_ = 0.6f;
  std::optional<std::size_t> clean_left_out_;
  std::vector<std::uint8_t> pca_;   // (grid_h·grid_w·3) RGB, add_pca; empty: none
  Matrix q_, k_;                    // single head only: (T, d_k)
  bool qk_scale_ = true;
};

// The gallery of a batch (the pipeline names it <out>/index.html): each page's thumbnail
// linking to it, sortable by name and by the entropy of the drawn map. pages: relative to
// the gallery's folder. Reads each page's
// summary block; a page that has none is listed without a thumbnail, a missing page (its image
// failed) is left out.
// The Content-Security-Policy of every report page (the one in its meta tag).
std::string report_csp();

void write_report_index(const std::filesystem::path& index, const std::vector<std::filesystem::path>& pages);

}  // namespace vitattn::report
