#include "report/report_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include "core/attention_stats.hpp"
#include "core/error.hpp"
#include "core/token_diagnostics.hpp"
#include "files/file_io.hpp"
#include "report/html_page.hpp"
#include "image/image_writer.hpp"
#include "image/overlay.hpp"
#include "report_assets.hpp"

namespace vitattn::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kDisplaySide = 1024;  // the page's image: longest side at most this
constexpr int kThumbSide = 192;     // the gallery's thumbnails
constexpr double kBase64 = 4.0 / 3.0;
constexpr const char* kColormaps[] = {"jet", "viridis", "inferno", "magma", "plasma", "turbo", "hot", "bone", "cividis"};
constexpr const char* kSummaryOpen = "<script type=\"application/json\" id=\"vitattn-summary\">";

// The page's bytes for every layer's full matrices (H, T, T): u8, one byte a weight and a
// float scale a row; f16, two bytes a weight.
double full_matrices_mb(const ReportShape& s, ReportPrecision precision) {
  const double t = s.tokens(), rows = static_cast<double>(s.layers) * s.heads * t;
  const double bytes = precision == ReportPrecision::f16 ? rows * t * 2.0 : rows * t + rows * 4.0;
  return bytes * kBase64 / 1e6;
}

double one_layer_mb(const ReportShape& s, ReportPrecision precision) { return full_matrices_mb(s, precision) / s.layers; }

// The page's bytes for one layer's class-token rows (H, 1, T).
double class_rows_mb(const ReportShape& s, ReportPrecision precision) {
  const double t = s.tokens(), rows = s.heads;
  const double bytes = precision == ReportPrecision::f16 ? rows * t * 2.0 : rows * t + rows * 4.0;
  return bytes * kBase64 / 1e6;
}

// The page's bytes for one relevance map over the patches: a byte (u8) or two (f16) a value,
// and its float scale.
double relevance_map_mb(const ReportShape& s, ReportPrecision precision) {
  const double n = static_cast<double>(s.grid_h) * s.grid_w;
  return ((precision == ReportPrecision::f16 ? 2.0 : 1.0) * n + 4.0) * kBase64 / 1e6;
}

// a (T) softmax row → q8 (T) with a ≈ q·s/255, s = max(a). Rounding to nearest: error ≤ s/510.
float quantise_row(const float* a, std::size_t n, std::uint8_t* q8) {
  const float s = *std::max_element(a, a + n);
  for (std::size_t j = 0; j < n; ++j)
    q8[j] = s > 0.0f ? static_cast<std::uint8_t>(std::clamp(std::lround(a[j] / s * 255.0f), 0L, 255L)) : 0;
  return std::max(s, 0.0f);
}

// a (rows, T) row-major → f16 (rows·T) half-precision bits, rounded to nearest (OpenCV's
// conversion). Returns the largest weight.
float to_half(const float* a, std::size_t rows, std::size_t t, std::uint16_t* f16) {
  const cv::Mat in(static_cast<int>(rows), static_cast<int>(t), CV_32F, const_cast<float*>(a));
  cv::Mat out(static_cast<int>(rows), static_cast<int>(t), CV_16F, f16);
  in.convertTo(out, CV_16F);
  if (out.data != reinterpret_cast<std::uint8_t*>(f16)) throw Error("report: fp16 conversion did not write in place");
  double largest = 0;
  cv::minMaxLoc(in, nullptr, &largest);
  return static_cast<float>(std::max(largest, 0.0));
}

std::string jpeg_data_uri(const cv::Mat& bgr, int longest_side, int quality) {
  const double f = std::min(1.0, static_cast<double>(longest_side) / std::max(bgr.cols, bgr.rows));
  cv::Mat small = bgr;
  if (f < 1.0)
    cv::resize(bgr, small, cv::Size(std::max(1, static_cast<int>(std::lround(bgr.cols * f))),
                                    std::max(1, static_cast<int>(std::lround(bgr.rows * f)))),
               0, 0, cv::INTER_AREA);
  const std::vector<std::uint8_t> bytes = image::encode_image(small, {image::ImageFormat::jpg, quality});
  return "data:image/jpeg;base64," + base64(bytes.data(), bytes.size());
}

// OpenCV's colormap as 256 RGB triples, so the page colours as the PNG does.
std::string colormap_lut(int colormap) {
  cv::Mat ramp(1, 256, CV_8UC1);
  for (int i = 0; i < 256; ++i) ramp.at<std::uint8_t>(0, i) = static_cast<std::uint8_t>(i);
  cv::Mat bgr;
  cv::applyColorMap(ramp, bgr, colormap);
  std::vector<std::uint8_t> rgb;
  for (int i = 0; i < 256; ++i) {
    const cv::Vec3b c = bgr.at<cv::Vec3b>(0, i);
    rgb.insert(rgb.end(), {c[2], c[1], c[0]});
  }
  return base64(rgb.data(), rgb.size());
}

PageTemplate report_template() {
  return {report_assets::report_html_text, report_assets::report_css_text, report_assets::report_css_sha256,
          report_assets::report_js_text, report_assets::report_js_sha256};
}

// Percent-encodes a relative path for an href, segment by segment.
std::string href(const fs::path& relative) {
  std::string out;
  for (const fs::path& part : relative) {
    if (!out.empty()) out += '/';
    for (const char ch : part.string()) {
      const auto c = static_cast<unsigned char>(ch);
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
      else out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The summary block at the head of a page; empty json when there is none.
json read_summary(const fs::path& page) {
  std::ifstream in(page, std::ios::binary);
  if (!in) return {};
  std::string head(256 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t open = head.find(kSummaryOpen);
  if (open == std::string::npos) return {};
  const std::size_t begin = open + std::char_traits<char>::length(kSummaryOpen);
  const std::size_t end = head.find("</script>", begin);
  if (end == std::string::npos) return {};
  json summary = json::parse(head.substr(begin, end - begin), nullptr, false);
  return summary.is_object() ? summary : json{};
}

// The page's "classes": the predictions, most likely first, and whether the page holds their maps.
json classes_json(const std::vector<ReportClass>& classes, int kept) {
  json out = json::array();
  for (std::size_t c = 0; c < classes.size(); ++c)
    out.push_back({{"index", classes[c].index},
                   {"label", classes[c].label},
                   {"probability", classes[c].probability},
                   {"maps", static_cast<int>(c) < kept}});
  return out;
}

// Each map with its scale and its error bound: u8, s/510 (rounding to nearest of m/s·255); f16,
// half an ulp of m/s ≤ 1 at 11 significant bits, s·2⁻¹¹ (below 2⁻¹⁴, subnormals: s·2⁻²⁵). The
// page's Float32Array adds half an ulp of a value ≤ s, s·2⁻²⁴.
json relevance_json(const std::vector<ReportBuilder::RelevanceMap>& maps_in, const std::string& about, bool half) {
  json maps = json::array();
  for (const ReportBuilder::RelevanceMap& m : maps_in) {
    const double bound = (half ? std::ldexp(1.0, -11) : 1.0 / 510.0) + std::ldexp(1.0, -24);
    json map = {{"method", m.method}, {"class", m.class_index}, {"scale", m.scale}, {"max_error", static_cast<double>(m.scale) * bound}};
    if (half) map["f16"] = base64(m.f16.data(), m.f16.size() * sizeof(std::uint16_t));
    else map["q8"] = base64(m.q8.data(), m.q8.size());
    maps.push_back(std::move(map));
  }
  return {{"about", about}, {"maps", std::move(maps)}};
}

// A (rows, cols) row-major matrix as the page reads it: little-endian float32, base64.
std::string float32_base64(const Matrix& m) {
  return base64(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
}

// The Tokens panel's data. norms, sinks: (layers, T) float32; flagged: each layer's token
// indices; median, register_share: (layers); heads: one column of the head table each,
// [layer][head]. clean: the drawn layer and how many tokens --clean left out there, or null.
json tokens_json(const TokenDiagnostics& d, float mask_threshold, std::optional<std::size_t> clean, int clean_layer,
                 const std::vector<std::uint8_t>& pca) {
  json heads = {{"entropy", json::array()}, {"distance", json::array()}, {"mask", json::array()},
                {"flagged", json::array()}};
  for (const std::vector<HeadStats>& layer : d.heads) {
    json entropy = json::array(), distance = json::array(), mask = json::array(), flagged = json::array();
    for (const HeadStats& h : layer) {
      entropy.push_back(h.entropy);
      distance.push_back(h.distance_px);
      mask.push_back(h.mask_share);
      flagged.push_back(h.flagged_share);
    }
    heads["entropy"].push_back(std::move(entropy));
    heads["distance"].push_back(std::move(distance));
    heads["mask"].push_back(std::move(mask));
    heads["flagged"].push_back(std::move(flagged));
  }
  json out = {{"ratio", d.artifact_ratio},
              {"mask_threshold", mask_threshold},
              {"norms", float32_base64(d.norms)},
              {"sinks", float32_base64(d.sinks)},
              {"median", std::vector<float>(d.median_norm.data(), d.median_norm.data() + d.median_norm.size())},
              {"flagged", d.flagged},
              {"register_share", d.shape.registers() > 0 ? json(std::vector<float>(d.register_share.data(),
                                                                                   d.register_share.data() + d.register_share.size()))
                                                          : json(nullptr)},
              {"heads", std::move(heads)},
              {"clean", clean ? json({{"layer", clean_layer}, {"left_out", *clean}}) : json(nullptr)},
              {"pca", pca.empty() ? json(nullptr) : json(base64(pca.data(), pca.size()))}};
  return out;
}

}  // namespace

ReportBuilder::ReportBuilder(const ReportShape& shape, int full_layer, const ReportSettings& settings)
    : shape_(shape), settings_(settings), full_layer_(full_layer) {
  full_mb_ = full_matrices_mb(shape, settings.precision);
  // What goes first: every layer's full matrices but the drawn one's (over the budget or not);
  // then the relevance maps of the least likely classes, all but the most likely's.
  full_layers_ = full_mb_ + relevance_mb(shape.classes) <= settings.max_mb ? shape.layers : 1;
  const double attention_mb =
      full_layers_ == shape.layers
          ? full_mb_
          : one_layer_mb(shape, settings.precision) + (shape.layers - 1) * class_rows_mb(shape, settings.precision);
  classes_kept_ = std::max(shape.classes, 0);
  while (classes_kept_ > 1 && attention_mb + relevance_mb(classes_kept_) > settings.max_mb) --classes_kept_;
  layers_.resize(static_cast<std::size_t>(shape.layers));
  entropy_.assign(static_cast<std::size_t>(shape.layers), std::vector<double>(static_cast<std::size_t>(shape.heads), 0.0));
  distance_ = entropy_;
  distances_ = patch_distances(shape.grid_h, shape.grid_w, shape.patch_size);
}

void ReportBuilder::add_layer(int layer, const std::vector<Matrix>& heads) {
  const std::size_t t = static_cast<std::size_t>(shape_.tokens());
  if (layer < 0 || layer >= shape_.layers || static_cast<int>(heads.size()) != shape_.heads)
    throw Error(fmt::format("report: layer {} with {} heads does not fit {} layers of {} heads", layer, heads.size(),
                            shape_.layers, shape_.heads));
  const bool full = full_layers_ == shape_.layers || (full_layers_ == 1 && layer == full_layer_);
  Layer& out = layers_[static_cast<std::size_t>(layer)];
  out.rows = full ? static_cast<int>(t) : 1;
  const std::size_t rows = static_cast<std::size_t>(out.rows);
  const bool half = settings_.precision == ReportPrecision::f16;
  if (half) out.f16.assign(heads.size() * rows * t, 0);
  else {
    out.q8.assign(heads.size() * rows * t, 0);
    out.scale.assign(heads.size() * rows, 0.0f);
  }
  for (std::size_t h = 0; h < heads.size(); ++h) {
    const Matrix& a = heads[h];  // (T, T)
    if (static_cast<std::size_t>(a.rows()) != t || static_cast<std::size_t>(a.cols()) != t)
      throw Error(fmt::format("report: layer {} head {} is {}x{}, expected {} tokens", layer, h, a.rows(), a.cols(), t));
    if (half) {
      largest_scale_ = std::max(largest_scale_, to_half(a.data(), rows, t, out.f16.data() + h * rows * t));
    } else {
      for (std::size_t r = 0; r < rows; ++r) {
        const float s = quantise_row(a.data() + r * t, t, out.q8.data() + (h * rows + r) * t);
        out.scale[h * rows + r] = s;
        largest_scale_ = std::max(largest_scale_, s);
      }
    }
    // From the full-precision weights, whatever the page keeps.
    entropy_[static_cast<std::size_t>(layer)][h] = mean_row_entropy(a);
    distance_[static_cast<std::size_t>(layer)][h] = mean_attention_distance(a, shape_.first_patch, distances_);
  }
}

void ReportBuilder::add_probe(const std::vector<Matrix>& heads) {
  const std::size_t t = static_cast<std::size_t>(shape_.tokens());
  if (!shape_.probe) throw Error("report: a probe's attention handed to the page of a model without one");
  if (static_cast<int>(heads.size()) != shape_.heads)
    throw Error(fmt::format("report: the probe's attention has {} heads, the page {}", heads.size(), shape_.heads));
  const bool half = settings_.precision == ReportPrecision::f16;
  probe_ = Layer{1, {}, {}, {}};
  if (half) probe_.f16.assign(heads.size() * t, 0);
  else {
    probe_.q8.assign(heads.size() * t, 0);
    probe_.scale.assign(heads.size(), 0.0f);
  }
  for (std::size_t h = 0; h < heads.size(); ++h) {
    const Matrix& a = heads[h];  // (1, T)
    if (a.rows() != 1 || static_cast<std::size_t>(a.cols()) != t)
      throw Error(fmt::format("report: the probe's head {} is {}x{}, expected 1x{}", h, a.rows(), a.cols(), t));
    const float s = half ? to_half(a.data(), 1, t, probe_.f16.data() + h * t)
                         : quantise_row(a.data(), t, probe_.q8.data() + h * t);
    if (!half) probe_.scale[h] = s;
    largest_scale_ = std::max(largest_scale_, s);
  }
}

void ReportBuilder::add_query_key(const Matrix& q, const Matrix& k, bool scale) {
  q_ = q;
  k_ = k;
  qk_scale_ = scale;
}

void ReportBuilder::add_tokens(const TokenDiagnostics& tokens, float mask_threshold,
                               std::optional<std::size_t> left_out_by_clean) {
  const TokenShape& t = tokens.shape;
  if (t.layers != shape_.layers || t.heads != shape_.heads || t.first_patch != shape_.first_patch ||
      t.grid_h != shape_.grid_h || t.grid_w != shape_.grid_w || tokens.norms.rows() != shape_.layers ||
      tokens.norms.cols() != shape_.tokens() || tokens.sinks.rows() != shape_.layers ||
      tokens.sinks.cols() != shape_.tokens() || static_cast<int>(tokens.flagged.size()) != shape_.layers ||
      static_cast<int>(tokens.heads.size()) != shape_.layers)
    throw Error(fmt::format("report: token diagnostics of {} layers, {} heads, {} tokens on a {}x{} grid do not fit the "
                            "page's {} layers, {} heads, {} tokens on a {}x{} grid",
                            t.layers, t.heads, tokens.norms.cols(), t.grid_h, t.grid_w, shape_.layers, shape_.heads,
                            shape_.tokens(), shape_.grid_h, shape_.grid_w));
  tokens_ = tokens;
  mask_threshold_ = mask_threshold;
  clean_left_out_ = left_out_by_clean;
}

void ReportBuilder::add_pca(std::vector<std::uint8_t> rgb) {
  const std::size_t expected = static_cast<std::size_t>(shape_.grid_h) * static_cast<std::size_t>(shape_.grid_w) * 3;
  if (rgb.size() != expected)
    throw Error(fmt::format("report: the PCA picture has {} bytes, expected {} (a {}x{} grid, RGB)", rgb.size(), expected,
                            shape_.grid_h, shape_.grid_w));
  pca_ = std::move(rgb);
}

double ReportBuilder::relevance_mb(int classes) const {
  return static_cast<double>(classes) * shape_.class_methods * relevance_map_mb(shape_, settings_.precision);
}

void ReportBuilder::add_predictions(const std::vector<ReportClass>& classes, const std::string& about) {
  if (static_cast<int>(classes.size()) > shape_.classes)
    throw Error(fmt::format("report: {} classes handed over, the page was planned for {}", classes.size(), shape_.classes));
  classes_ = classes;
  classes_about_ = about;
}

void ReportBuilder::add_relevance(const std::string& method, int class_index, const Matrix& signed_map) {
  const auto rank = std::find_if(classes_.begin(), classes_.end(), [&](const ReportClass& c) { return c.index == class_index; });
  if (rank == classes_.end() || rank - classes_.begin() >= classes_kept_)
    throw Error(fmt::format("report: class {} is not one of the {} whose maps the page keeps", class_index, classes_kept_));
  const Matrix map = signed_map.cwiseMax(0.0f);  // the contract's positive part
  if (map.rows() != shape_.grid_h || map.cols() != shape_.grid_w)
    throw Error(fmt::format("report: the {} map of class {} is {}x{}, expected the {}x{} grid", method, class_index,
                            map.rows(), map.cols(), shape_.grid_h, shape_.grid_w));
  const std::size_t n = static_cast<std::size_t>(map.size());
  RelevanceMap out{method, class_index, 0.0f, {}, {}};
  if (settings_.precision == ReportPrecision::f16) {
    const float s = std::max(map.maxCoeff(), 0.0f);
    const Matrix unit = s > 0.0f ? Matrix(map / s) : Matrix(Matrix::Zero(map.rows(), map.cols()));  // m/s ≤ 1
    out.f16.assign(n, 0);
    to_half(unit.data(), 1, n, out.f16.data());
    out.scale = s;
  } else {
    out.q8.assign(n, 0);
    out.scale = quantise_row(map.data(), n, out.q8.data());
  }
  relevance_.push_back(std::move(out));
}

void ReportBuilder::add_texts(ReportTexts texts) {
  const auto lh = static_cast<std::size_t>(texts.layers) * static_cast<std::size_t>(texts.heads);
  for (std::size_t t = 0; t < texts.prompts.size(); ++t) {
    const ReportPrompt& p = texts.prompts[t];
    const std::size_t n = p.tokens.size();
    if (p.words.size() != p.relevance.size() || p.attention.size() != lh * n * n ||
        p.first_word < 0 || static_cast<std::size_t>(p.first_word) + p.words.size() > n)
      throw Error(fmt::format("report: text {} has {} words, {} relevances, {} tokens from {} and {} attention values "
                              "(expected {} layers x {} heads x {}²)",
                              t, p.words.size(), p.relevance.size(), n, p.first_word, p.attention.size(), texts.layers,
                              texts.heads, n));
  }
  texts_ = std::move(texts);
}

namespace {

// The Prompts panel's data: the attention as base64 float32 (exact, and smaller than JSON numbers).
json texts_json(const ReportTexts& texts) {
  json prompts = json::array();
  for (const ReportPrompt& p : texts.prompts)
    prompts.push_back({{"text", p.text},
                       {"probability", p.probability},
                       {"words", p.words},
                       {"relevance", p.relevance},
                       {"first_word", p.first_word},
                       {"tokens", p.tokens},
                       {"attention", base64(p.attention.data(), p.attention.size() * sizeof(float))}});
  return {{"causal", texts.causal},
          {"probability", texts.probability},
          {"layers", texts.layers},
          {"heads", texts.heads},
          {"relevance_from", texts.relevance_from},
          {"prompts", std::move(prompts)}};
}

}  // namespace

std::string ReportBuilder::budget_note() const {
  std::string note;
  if (full_layers_ < shape_.layers)
    note = fmt::format(
        "The full matrices of every layer would take {:.3g} MB{}, over the budget of {:.3g} MB: every layer but layer {} "
        "keeps only the class token's row of every head, so other queries, the key view and rollout are not available "
        "there.",
        full_mb_,
        shape_.classes > 0 ? fmt::format(" (with the relevance maps, {:.3g} MB)", full_mb_ + relevance_mb(shape_.classes))
                           : std::string(),
        settings_.max_mb, full_layer_);
  if (classes_kept_ < static_cast<int>(classes_.size())) {
    std::string dropped;
    for (std::size_t c = static_cast<std::size_t>(classes_kept_); c < classes_.size(); ++c)
      dropped += fmt::format("{}{}", dropped.empty() ? "" : ", ", classes_[c].label);
    note += fmt::format("{}Still over the budget: the relevance maps of the {} least likely class{} ({}) are left out; "
                        "those of the {} most likely are kept.",
                        note.empty() ? "" : " ", classes_.size() - static_cast<std::size_t>(classes_kept_),
                        classes_.size() - static_cast<std::size_t>(classes_kept_) == 1 ? "" : "es", dropped,
                        classes_kept_);
  }
  const double one = one_layer_mb(shape_, settings_.precision);
  if (one > settings_.max_mb)
    note += fmt::format("{}The full matrices of layer {} alone take {:.3g} MB, over the budget{}: they are kept, as the "
                        "layer drawn.",
                        note.empty() ? "" : " ", full_layer_, one,
                        note.empty() ? fmt::format(" of {:.3g} MB", settings_.max_mb) : std::string(" too"));
  return note;
}

std::string report_csp() { return page_csp(report_template()); }

void ReportBuilder::write(const fs::path& page, const std::string& name, const cv::Mat& bgr, const Matrix& drawn_map,
                          const std::string& model) const {
  const std::string html = page_text(name, bgr, drawn_map, model);
  files::write_file_atomic(page, html.data(), html.size());
}

std::string ReportBuilder::page_text(const std::string& name, const cv::Mat& bgr, const Matrix& drawn_map,
                                     const std::string& model) const {
  const ReportStart& start = settings_.start;
  json data;
  data["name"] = name;
  data["model"] = model;
  data["layers"] = shape_.layers;
  data["heads"] = shape_.heads;
  data["tokens"] = shape_.tokens();
  data["first_patch"] = shape_.first_patch;
  data["dist_token"] = shape_.dist_token;
  data["grid"] = {shape_.grid_h, shape_.grid_w};
  data["patch_size"] = shape_.patch_size;
  data["input"] = {shape_.input_w, shape_.input_h};
  data["image_size"] = {bgr.cols, bgr.rows};
  const bool half = settings_.precision == ReportPrecision::f16;
  data["quantisation"] = half ? "f16" : "u8-row";
  // u8: rounding q = round(a/s·255) is off by at most s/510. f16: rounding to 11 significant
  // bits is off by at most half an ulp, a·2⁻¹¹ ≤ s·2⁻¹¹ (below 2⁻¹⁴, subnormals: 2⁻²⁵). The
  // page's Float32Array adds at most half an ulp of a weight ≤ 1 (2⁻²⁴).
  data["max_error"] =
      static_cast<double>(largest_scale_) * (half ? std::ldexp(1.0, -11) : 1.0 / 510.0) + std::ldexp(1.0, -24);
  json layers = json::array();
  for (const Layer& l : layers_) {
    if (l.rows == 0) throw Error("report: a layer's attention was not handed over");
    if (half)
      layers.push_back({{"rows", l.rows}, {"f16", base64(l.f16.data(), l.f16.size() * sizeof(std::uint16_t))}});
    else
      layers.push_back({{"rows", l.rows},
                        {"q8", base64(l.q8.data(), l.q8.size())},
                        {"scale", base64(l.scale.data(), l.scale.size() * sizeof(float))}});
  }
  data["attention"] = std::move(layers);
  if (shape_.probe) {
    if (probe_.rows == 0) throw Error("report: the probe's attention was not handed over");
    data["probe"] = half ? json{{"rows", 1}, {"f16", base64(probe_.f16.data(), probe_.f16.size() * sizeof(std::uint16_t))}}
                         : json{{"rows", 1},
                                {"q8", base64(probe_.q8.data(), probe_.q8.size())},
                                {"scale", base64(probe_.scale.data(), probe_.scale.size() * sizeof(float))}};
  }
  data["entropy"] = entropy_;
  data["distance"] = distance_;
  if (shape_.classes > 0 && classes_.empty()) throw Error("report: the classes were not handed over");
  const int kept = std::min(classes_kept_, static_cast<int>(classes_.size()));
  if (static_cast<int>(relevance_.size()) != kept * shape_.class_methods)
    throw Error(fmt::format("report: {} relevance maps handed over, expected {} for {} classes", relevance_.size(),
                            kept * shape_.class_methods, kept));
  data["classes"] = classes_json(classes_, classes_kept_);
  data["relevance"] = relevance_json(relevance_, classes_about_, half);
  if (texts_) data["texts"] = texts_json(*texts_);
  json left_out = json::array();
  if (const std::string note = budget_note(); !note.empty()) left_out.push_back(note);
  if (q_.size() == 0 && shape_.layers == 1 && shape_.heads == 1)
    left_out.push_back("q and k are not in this page, so the step-by-step panel is off.");
  data["left_out"] = std::move(left_out);
  if (q_.size() > 0) {
    data["qk"] = {{"d_k", q_.cols()},
                  {"scale", qk_scale_},
                  {"q", base64(q_.data(), static_cast<std::size_t>(q_.size()) * sizeof(float))},
                  {"k", base64(k_.data(), static_cast<std::size_t>(k_.size()) * sizeof(float))}};
  }
  if (tokens_) data["tokens_panel"] = tokens_json(*tokens_, mask_threshold_, clean_left_out_, full_layer_, pca_);
  else if (!pca_.empty()) data["tokens_panel"] = {{"pca", base64(pca_.data(), pca_.size())}};
  const int layer = start.layer < 0 ? shape_.layers + start.layer : start.layer;
  data["start"] = {{"layer", std::clamp(layer, 0, shape_.layers - 1)},
                   {"head", start.head},
                   {"rollout", start.rollout},
                   {"discard_ratio", start.discard_ratio},
                   {"threshold", start.threshold ? json(*start.threshold) : json(nullptr)},
                   {"alpha", start.alpha},
                   {"colormap", start.colormap},
                   {"smooth", start.smooth},
                   {"method", start.method},
                   {"class", start.class_index},
                   {"query", start.query}};
  json colormaps = json::object();
  // The page's choices: the starting colormap when it is not among kColormaps, then those.
  // (Not a vector with an insert at its front: GCC 12 at -O3 flags a null dereference in
  // std::vector's reallocation path there, with -Werror an error in the release build.)
  const auto add_colormap = [&](const std::string& c) {
    if (const auto id = image::colormap_by_name(c)) colormaps[c] = colormap_lut(*id);
  };
  if (std::find(std::begin(kColormaps), std::end(kColormaps), start.colormap) == std::end(kColormaps))
    add_colormap(start.colormap);
  for (const char* c : kColormaps) add_colormap(c);
  data["colormaps"] = std::move(colormaps);
  data["image"] = jpeg_data_uri(bgr, kDisplaySide, 85);

  const json summary = {{"name", name},
                        {"thumbnail", jpeg_data_uri(bgr, kThumbSide, 75)},
                        {"entropy", map_entropy(drawn_map)},
                        {"layers", shape_.layers},
                        {"heads", shape_.heads},
                        {"tokens", shape_.tokens()}};
  return render_page(report_template(), {{"TITLE", html_escape(name + " — vitattn report")},
                                         {"SUMMARY", script_safe_json(summary.dump())},
                                         {"DATA", script_safe_json(data.dump())}});
}

void write_report_index(const fs::path& index, const std::vector<fs::path>& pages) {
  const fs::path out_dir = index.parent_path();
  std::string items;
  for (const fs::path& relative : pages) {
    std::error_code ec;
    if (!fs::is_regular_file(out_dir / relative, ec)) continue;  // its image failed: no page to link
    const json s = read_summary(out_dir / relative);
    const std::string name = s.contains("name") && s["name"].is_string() ? s["name"].get<std::string>() : relative.string();
    const double entropy = s.contains("entropy") && s["entropy"].is_number() ? s["entropy"].get<double>() : std::numeric_limits<double>::quiet_NaN();
    std::string thumb = s.contains("thumbnail") && s["thumbnail"].is_string() ? s["thumbnail"].get<std::string>() : "";
    if (thumb.rfind("data:image/jpeg;base64,", 0) != 0) thumb.clear();
    items += fmt::format(
        "<li class=\"card\" data-name=\"{0}\" data-entropy=\"{1}\"><a href=\"{2}\">{3}<span class=\"name\">{0}</span>"
        "<span class=\"entropy\">entropy {4}</span></a></li>\n",
        html_escape(name), std::isfinite(entropy) ? fmt::format("{:.6f}", entropy) : "", href(relative),
        thumb.empty() ? std::string() : "<img alt=\"\" src=\"" + html_escape(thumb) + "\">",
        std::isfinite(entropy) ? fmt::format("{:.3f} nats", entropy) : "unknown");
  }
  const PageTemplate gallery{report_assets::index_html_text, report_assets::report_css_text,
                           report_assets::report_css_sha256, report_assets::index_js_text,
                           report_assets::index_js_sha256};
  const std::string html = render_page(gallery, {{"COUNT", std::to_string(pages.size())}, {"ITEMS", items}});
  files::write_file_atomic(index, html.data(), html.size());
}

}  // namespace vitattn::report
