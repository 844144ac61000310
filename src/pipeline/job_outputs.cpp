#include "job_outputs.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "output_guard.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;

namespace {
// Every format an overlay can be written in (image_writer.hpp's ImageFormat).
constexpr const char* kOverlayExtensions[] = {".png", ".jpg", ".webp"};
}  // namespace

std::string overlay_suffix(const std::string& image_extension) { return "_attn" + image_extension; }

std::string head_overlay_suffix(int head, const std::string& image_extension) {
  return "_attn_h" + std::to_string(head) + image_extension;
}

const std::vector<BatchFile>& batch_files() {
  static const std::vector<BatchFile> files{
      {"predictions.csv", "_predictions.csv", &OutputSet::top, BatchFileKind::csv, "file,rank,class,label,probability", 1,
       roles::predictions, std::nullopt},
      {"faithfulness.csv", "_faithfulness.csv", &OutputSet::faithfulness, BatchFileKind::csv,
       "path,method,class,deletion_auc,insertion_auc,steps", 1, roles::faithfulness, std::nullopt},
      {"index.html", "_report.html", &OutputSet::report, BatchFileKind::gallery, nullptr, 2, roles::gallery,
       io::FileKind::vitattn_page},
  };
  return files;
}

const BatchFile& batch_file(bool OutputSet::*on) {
  for (const BatchFile& f : batch_files())
    if (f.on == on) return f;
  throw Error("no batch file for this output");  // a caller's bug: the field has no row above
}

std::string report_suffix() { return batch_file(&OutputSet::report).part_suffix; }

std::string report_index_name() { return batch_file(&OutputSet::report).name; }

std::string predictions_name() { return batch_file(&OutputSet::top).name; }

std::vector<std::string> output_suffixes(const OutputSet& outputs) {
  std::vector<std::string> s{overlay_suffix(outputs.image_extension)};
  for (int h = 0; h < outputs.head_overlays; ++h) s.push_back(head_overlay_suffix(h, outputs.image_extension));
  if (outputs.save_attention) {
    s.push_back("_attn.npy");
    s.push_back("_cls.npy");
  }
  if (outputs.mask) s.push_back("_mask.npy");
  for (const BatchFile& f : batch_files())  // each image's part of a batch file
    if (outputs.*f.on) s.push_back(f.part_suffix);
  return s;
}

std::vector<std::string> video_output_suffixes(const OutputSet& outputs) {
  std::vector<std::string> s{"_attn" + outputs.video_extension};
  if (outputs.save_attention) s.push_back("_cls.npy");
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

std::optional<io::FileKind> replaces_only(const fs::path& output) {
  const std::string name = output.filename().string(), page = report_suffix();
  if (name.size() > page.size() && name.compare(name.size() - page.size(), page.size(), page) == 0)
    return io::FileKind::vitattn_page;
  return std::nullopt;
}

bool is_output_name(const fs::path& file) {
  const std::string name = file.filename().string();
  const auto ends_with = [&name](const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const char* video : {"_attn.mp4", "_attn.avi"})  // video_output_suffixes, either codec
    if (ends_with(video)) return true;
  for (const char* ext : kOverlayExtensions) {
    OutputSet every;  // every output any run can write; one head stands for all in the loop below
    every.image_extension = ext;
    every.save_attention = true;
    every.mask = true;
    for (const BatchFile& f : batch_files()) every.*f.on = true;
    for (const std::string& suffix : output_suffixes(every))
      if (ends_with(suffix)) return true;
    // "_attn_h<digits>.<ext>"
    const std::string head = "_attn_h", image = ext;
    if (!ends_with(image)) continue;
    const std::size_t digits_end = name.size() - image.size();
    std::size_t digits_begin = digits_end;
    while (digits_begin > 0 && std::isdigit(static_cast<unsigned char>(name[digits_begin - 1]))) --digits_begin;
    if (digits_begin < digits_end && digits_begin > head.size() &&
        name.compare(digits_begin - head.size(), head.size(), head) == 0)
      return true;
  }
  return false;
}

}  // namespace vitattn::pipeline
