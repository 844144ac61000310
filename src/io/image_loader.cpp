#include "image_loader.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "core/error.hpp"
#include "file_io.hpp"
#include "image_header.hpp"

namespace vitattn::io {
namespace {

std::string megapixels(std::uint64_t pixels) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MP", static_cast<double>(pixels) / 1e6);
  return buf;
}

}  // namespace

cv::Mat decode_image(const std::vector<std::uint8_t>& bytes, const std::string& source, std::uint64_t max_pixels) {
  if (bytes.empty()) throw Error(source + ": file is empty (0 bytes)");
  const std::span<const std::uint8_t> view(bytes);
  if (const auto size = read_image_size(view)) {
    if (size->width == 0 || size->height == 0)
      throw Error(source + ": header gives an empty image (" + std::to_string(size->width) + "x" +
                  std::to_string(size->height) + ")");
    const std::uint64_t pixels = size->width * size->height;  // both < 2^32: no overflow
    if (pixels > max_pixels)
      throw Error(source + ": image is " + std::to_string(size->width) + "x" + std::to_string(size->height) + " (" +
                  megapixels(pixels) + "), over the --max-pixels limit of " + megapixels(max_pixels));
  }
  if (is_jpeg(view) && jpeg_is_truncated(view)) throw Error(source + ": JPEG data is truncated (no end-of-image marker)");

  cv::Mat bgr;
  try {
    // imdecode takes a non-owning Mat over our bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data()));
    bgr = cv::imdecode(buf, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    throw Error(source + ": cannot decode image: " + e.err);
  }
  if (bgr.empty()) throw Error(source + ": not a readable image (unknown format or corrupt data)");
  if (static_cast<std::uint64_t>(bgr.total()) > max_pixels)  // formats whose header we do not parse
    throw Error(source + ": image is " + std::to_string(bgr.cols) + "x" + std::to_string(bgr.rows) +
                ", over the --max-pixels limit of " + megapixels(max_pixels));
  return bgr;
}

cv::Mat load_image(const std::filesystem::path& path, std::uint64_t max_pixels) {
  return decode_image(read_file(path), display(path), max_pixels);
}

ImageTensor preprocess(const cv::Mat& bgr, int img_size, const Normalization& norm) {
  CV_Assert(bgr.type() == CV_8UC3);
  const bool shrinks = bgr.cols >= img_size && bgr.rows >= img_size;
  cv::Mat resized, rgb;
  cv::resize(bgr, resized, cv::Size(img_size, img_size), 0, 0, shrinks ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::cvtColor(resized, rgb, cv::COLOR_BGR2RGB);
  return normalize_rgb(rgb.ptr<std::uint8_t>(), img_size, img_size, norm);
}

}  // namespace vitattn::io
