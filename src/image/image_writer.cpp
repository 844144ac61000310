#include "image/image_writer.hpp"

#include <opencv2/imgcodecs.hpp>
#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "image/png_writer.hpp"

namespace vitattn::io {

const char* extension(ImageFormat format) {
  switch (format) {
    case ImageFormat::jpg: return ".jpg";
    case ImageFormat::webp: return ".webp";
    case ImageFormat::png: break;
  }
  return ".png";
}

std::vector<std::uint8_t> encode_image(const cv::Mat& image, const OutputFormat& format) {
  if (format.format == ImageFormat::png) return encode_png(image);
  const int quality_flag = format.format == ImageFormat::jpg ? cv::IMWRITE_JPEG_QUALITY : cv::IMWRITE_WEBP_QUALITY;
  std::vector<std::uint8_t> bytes;
  const std::string name = format.format == ImageFormat::jpg ? "JPEG" : "WebP";
  try {
    if (!cv::imencode(extension(format.format), image, bytes, {quality_flag, format.quality}))
      throw Error(name + " encoding failed");
  } catch (const cv::Exception& e) {
    throw Error(name + " encoding failed: " + e.err);
  }
  return bytes;
}

void write_image_atomic(const std::filesystem::path& path, const cv::Mat& image, const OutputFormat& format) {
  std::vector<std::uint8_t> bytes;
  try {
    bytes = encode_image(image, format);
  } catch (const Error& e) {
    throw Error(display(path) + ": " + e.what());
  }
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::io
