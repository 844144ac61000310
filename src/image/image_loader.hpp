#pragma once
// Decoding an image file and preparing it for the model.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "core/image_tensor.hpp"

namespace vitattn::image {

// The values an Error from here may be about (core/error.hpp's Subject): a caller maps them
// to its own names for them (the command line to its flags).
namespace roles {
inline constexpr const char* pixel_limit = "pixel limit";
inline constexpr const char* strict_decoding = "strict decoding";
}  // namespace roles

// What to do when the decoder worked around damage (a JPEG with corrupt entropy-coded data
// still decodes, with smeared or grey blocks; libjpeg, libpng or OpenCV said so).
struct DamagePolicy {
  bool strict = false;                           // refuse the image (Error) instead of warning
  std::function<void(const std::string&)> warn;  // hears "PATH: damaged … data (…)"; unset: not told
};

// Reads and decodes with OpenCV IMREAD_COLOR (8-bit BGR: grey replicated, alpha dropped,
// 16-bit scaled down, EXIF orientation applied). Refuses, with Error "PATH: reason",
// empty files, formats vitattn does not read ("format not supported (GIF; …)"), images over
// `max_pixels` (checked from the header before decoding), truncated JPEGs and PNGs, and
// anything OpenCV cannot decode, quoting what the decoder said. Nothing reaches stderr.
cv::Mat load_image(const std::filesystem::path& path, std::uint64_t max_pixels, const DamagePolicy& damage = {});

// Same, from bytes already in memory; `source` names them in errors.
cv::Mat decode_image(const std::vector<std::uint8_t>& bytes, const std::string& source, std::uint64_t max_pixels,
                     const DamagePolicy& damage = {});

// bgr (H, W) 8-bit → (3, S, S) normalised RGB: cv::resize with INTER_AREA when the image
// shrinks on both axes, INTER_LINEAR otherwise, then (u8/255 − mean) / std.
ImageTensor preprocess(const cv::Mat& bgr, int img_size, const Normalization& norm);
// Same to (3, height, width): INTER_AREA only when both sides shrink.
ImageTensor preprocess(const cv::Mat& bgr, int width, int height, const Normalization& norm);

}  // namespace vitattn::image
