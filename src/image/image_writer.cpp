#include "image/image_writer.hpp"

#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "image/codec_module.hpp"
#include "image/png_writer.hpp"

namespace vitattn::image {

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
  std::vector<std::uint8_t> bytes;
  const std::string name = format.format == ImageFormat::jpg ? "JPEG" : "WebP";
  // JPEG and WebP through OpenCV's imencode in the codec module, loaded on the first such image.
  const codec_abi::Table& codecs = codec_module(name + " encoding");
  codec_abi::Status status;
  const auto append = [](void* ctx, const std::uint8_t* p, std::size_t n) {
    static_cast<std::vector<std::uint8_t>*>(ctx)->insert(static_cast<std::vector<std::uint8_t>*>(ctx)->end(), p, p + n);
  };
  if (!codecs.encode(extension(format.format), &image, format.quality, append, &bytes, &status)) {
    std::string why = name + " encoding failed";
    if (status.message[0] != '\0') {
      why += ": ";
      why += status.message;
    }
    throw Error(why);
  }
  return bytes;
}

void write_image_atomic(const std::filesystem::path& path, const cv::Mat& image, const OutputFormat& format) {
  const std::vector<std::uint8_t> bytes = naming_source(files::display(path), [&] { return encode_image(image, format); });
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::image
