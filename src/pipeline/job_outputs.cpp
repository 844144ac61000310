#include "job_outputs.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "image/image_writer.hpp"
#include "map_methods.hpp"
#include "output_guard.hpp"
#include "video/video_writer.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;

std::string default_image_extension() { return image::extension(image::ImageFormat::png); }

std::string default_video_extension() { return video::extension(video::VideoCodec::h264_mp4); }

std::string overlay_suffix(const std::string& image_extension) { return "_attn" + image_extension; }

std::string map_tag(const std::string& method, std::optional<int> class_index, ClassSource source) {
  const char* letter = source == ClassSource::texts ? "_t" : "_c";
  return (method.empty() ? "" : "_" + method) + (class_index ? letter + std::to_string(*class_index) : "");
}

std::string head_tag(int head) { return "_h" + std::to_string(head); }

std::string map_overlay_suffix(const std::string& tag, const std::string& image_extension) {
  return "_attn" + tag + image_extension;
}

namespace {
// The NumPy arrays' extension: every .npy output is "_<what>.npy".
constexpr const char* kArrayExtension = ".npy";
}  // namespace

std::string array_suffix(const std::string& what) { return "_" + what + kArrayExtension; }

std::string text_array_name(const std::string& what) { return "text_" + what + kArrayExtension; }

std::string text_labels_name() { return "text_labels.txt"; }

std::string map_values_suffix(const std::string& tag) { return "_cls" + tag + kArrayExtension; }

std::string pixel_values_suffix(const std::string& tag) { return "_pixels" + tag + kArrayExtension; }

std::string attention_values_suffix() { return array_suffix("attn"); }

std::string mask_suffix() { return array_suffix("mask"); }

std::string head_overlay_suffix(int head, const std::string& image_extension) {
  return map_overlay_suffix(head_tag(head), image_extension);
}

const std::vector<BatchFile>& batch_files() {
  static const std::vector<BatchFile> files{
      {"predictions.csv", "_predictions.csv", &OutputSet::top, BatchFileKind::csv, "file,rank,class,label,probability", 1,
       roles::predictions, std::nullopt},
      {"faithfulness.csv", "_faithfulness.csv", &OutputSet::faithfulness, BatchFileKind::csv,
       "path,method,class,deletion_auc,insertion_auc,steps", 1, roles::faithfulness, std::nullopt},
      {"heads.csv", "_heads.csv", &OutputSet::heads, BatchFileKind::csv,
       "image,layer,head,entropy,distance_px,mask_share,flagged_share", 1, roles::heads, std::nullopt},
      {"index.html", "_report.html", &OutputSet::report, BatchFileKind::gallery, nullptr, 2, roles::gallery,
       files::FileKind::vitattn_page},
  };
  return files;
}

const BatchFile& batch_file(bool OutputSet::*on) {
  for (const BatchFile& f : batch_files())
    if (f.on == on) return f;
  throw Error("no batch file for this output");  // a caller's bug: the field has no row above
}

std::string pca_suffix() { return "_pca.png"; }

std::string words_suffix() { return "_words.csv"; }

std::string settings_suffix() { return "_settings.txt"; }

std::string frames_suffix() { return "_frames"; }

const char* pca_fit_name() { return "pca_fit.npy"; }

std::string report_suffix() { return batch_file(&OutputSet::report).part_suffix; }

std::string report_index_name() { return batch_file(&OutputSet::report).name; }

std::string predictions_name() { return batch_file(&OutputSet::top).name; }

std::string eval_summary_name() { return "eval.csv"; }
std::string eval_images_name() { return "eval_images.csv"; }
std::string eval_curves_name() { return "eval_curves.csv"; }
std::string eval_page_name() { return "eval.html"; }
std::string random_baseline_name() { return "random"; }
std::string eval_part_suffix() { return "_eval.csv"; }
std::string eval_mask_name(const std::filesystem::path& input) { return input.stem().string() + default_image_extension(); }

namespace {

// An eval job's: no overlay; its part last but the record, so that the part there means the maps are.
std::vector<std::string> eval_output_suffixes(const OutputSet& outputs) {
  std::vector<std::string> s;
  if (outputs.save_attention)
    for (const std::string& tag : outputs.map_tags) s.push_back(map_values_suffix(tag));
  s.push_back(eval_part_suffix());
  if (!outputs.settings.empty()) s.push_back(settings_suffix());
  return s;
}

}  // namespace

std::vector<std::string> output_suffixes(const OutputSet& outputs) {
  if (outputs.eval) return eval_output_suffixes(outputs);
  std::vector<std::string> s{overlay_suffix(outputs.image_extension)};
  for (int h = 0; h < outputs.head_overlays; ++h) s.push_back(head_overlay_suffix(h, outputs.image_extension));
  for (const std::string& tag : outputs.map_tags) s.push_back(map_overlay_suffix(tag, outputs.image_extension));
  if (outputs.save_attention) {
    s.push_back(attention_values_suffix());
    if (outputs.map_tags.empty()) s.push_back(map_values_suffix(""));
    for (const std::string& tag : outputs.map_tags) s.push_back(map_values_suffix(tag));
    for (const std::string& tag : outputs.pixel_tags) s.push_back(pixel_values_suffix(tag));
  }
  if (outputs.mask) s.push_back(mask_suffix());
  if (outputs.pca) s.push_back(pca_suffix());
  if (outputs.words) s.push_back(words_suffix());
  for (const BatchFile& f : batch_files())  // each image's part of a batch file
    if (outputs.*f.on) s.push_back(f.part_suffix);
  if (!outputs.settings.empty()) s.push_back(settings_suffix());
  return s;
}

std::vector<std::string> video_output_suffixes(const OutputSet& outputs) {
  std::vector<std::string> s{overlay_suffix(outputs.video_extension)};
  if (outputs.save_attention) s.push_back(map_values_suffix(""));
  if (outputs.top) s.push_back(batch_file(&OutputSet::top).part_suffix);  // its classes frame by frame
  if (!outputs.settings.empty()) s.push_back(settings_suffix());
  return s;
}

std::vector<fs::path> output_paths(const fs::path& output_base, const OutputSet& outputs, bool video) {
  std::vector<fs::path> paths;
  for (const std::string& suffix : video ? video_output_suffixes(outputs) : output_suffixes(outputs)) {
    fs::path p = output_base;
    p += suffix;
    paths.push_back(std::move(p));
  }
  return paths;
}

std::optional<files::FileKind> replaces_only(const fs::path& output) {
  const std::string name = output.filename().string(), page = report_suffix();
  if (name.size() > page.size() && name.compare(name.size() - page.size(), page.size(), page) == 0)
    return files::FileKind::vitattn_page;
  return std::nullopt;
}

namespace {

// `stem` less a trailing "<marker><digits>" ("_c12", "_h3"); nullopt when it has none.
std::optional<std::string> without_numbered(const std::string& stem, const std::string& marker) {
  std::size_t digits = stem.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(stem[digits - 1]))) --digits;
  if (digits == stem.size() || digits < marker.size() || stem.compare(digits - marker.size(), marker.size(), marker) != 0)
    return std::nullopt;
  return stem.substr(0, digits - marker.size());
}

// A map's file among several, "<base><kind><tag><ending>" for kind "_attn", "_cls" or "_pixels": the tag
// one of map_tag's ("_<method>", "_c<digits>", "_<method>_c<digits>") or head_tag's.
bool is_tagged_map_name(const std::string& name, const std::string& kind, const std::string& ending) {
  if (name.size() <= ending.size() || name.compare(name.size() - ending.size(), ending.size(), ending) != 0) return false;
  std::string stem = name.substr(0, name.size() - ending.size());
  const auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (const auto head = without_numbered(stem, "_h"); head && ends_with(*head, kind)) return true;
  bool has_class = false;
  if (const auto rest = without_numbered(stem, "_c")) {
    stem = *rest;
    has_class = true;
  }
  if (has_class && ends_with(stem, kind)) return true;
  for (MapMethod m : every_method())
    if (ends_with(stem, kind + map_tag(method_name(m), std::nullopt))) return true;
  return false;
}

}  // namespace

bool is_output_name(const fs::path& file) {
  const std::string name = file.filename().string();
  const auto ends_with = [&name](const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (is_tagged_map_name(name, "_cls", kArrayExtension) || is_tagged_map_name(name, "_pixels", kArrayExtension))
    return true;
  if (ends_with(eval_part_suffix())) return true;
  for (const video::VideoCodec codec : video::kVideoCodecs)  // video_output_suffixes' overlay, either codec
    if (ends_with(overlay_suffix(video::extension(codec)))) return true;
  for (const image::ImageFormat format : image::kImageFormats) {
    const std::string ext = image::extension(format);
    OutputSet every;  // every output of fixed name any run can write; the tagged maps' below
    every.image_extension = ext;
    every.save_attention = true;
    every.pixel_tags = {""};
    every.mask = true;
    every.pca = true;
    every.words = true;
    every.settings = "any";
    for (const BatchFile& f : batch_files()) every.*f.on = true;
    for (const std::string& suffix : output_suffixes(every))
      if (ends_with(suffix)) return true;
    if (is_tagged_map_name(name, "_attn", ext)) return true;  // "_attn_h3.png", "_attn_chefer_c5.png", …
  }
  return false;
}

}  // namespace vitattn::pipeline
