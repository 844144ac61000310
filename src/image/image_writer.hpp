#pragma once
// Writing a rendered image to disk in the format the user chose: PNG with vitattn's own
// encoder (png_writer.hpp), JPEG and WebP through OpenCV's imencode for small previews.
#include <cstdint>
#include <filesystem>
#include <opencv2/core.hpp>
#include <vector>

namespace vitattn::image {

enum class ImageFormat { png, jpg, webp };

// Every format an image can be written in (--format), the default first.
inline constexpr ImageFormat kImageFormats[] = {ImageFormat::png, ImageFormat::jpg, ImageFormat::webp};

struct OutputFormat {
  ImageFormat format = ImageFormat::png;
  int quality = 90;  // 1–100, JPEG and WebP only (PNG is lossless)
};

// ".png", ".jpg" or ".webp": the one place a written image's extension is spelled (the
// pipeline's output names, pipeline/job_outputs.hpp, ask here).
const char* extension(ImageFormat format);

// 8-bit grey, BGR or BGRA → the file's bytes. Throws Error ("<format> encoding failed: …").
std::vector<std::uint8_t> encode_image(const cv::Mat& image, const OutputFormat& format);

// Encodes and writes via a temporary file and rename; throws Error naming `path`.
void write_image_atomic(const std::filesystem::path& path, const cv::Mat& image, const OutputFormat& format = {});

}  // namespace vitattn::image
