#include "image/image_loader.hpp"

#include <opencv2/imgproc.hpp>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "image/codec_module.hpp"
#include "image/decoder_messages.hpp"
#include "files/file_io.hpp"
#include "image/image_formats.hpp"
#include "image/image_header.hpp"
#include "image/jpeg_decoder.hpp"

namespace vitattn::image {
namespace {

std::string megapixels(std::uint64_t pixels) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MP", static_cast<double>(pixels) / 1e6);
  return buf;
}

// OpenCV ignores PNG colour profiles, but libpng still prints "iCCP: known incorrect sRGB
// profile" to stderr for many common files, burying real errors in a batch. The chunk is
// dropped before decoding; the pixels are the same.
std::optional<std::vector<std::uint8_t>> without_png_iccp(const std::vector<std::uint8_t>& b) {
  if (b.size() < 8 || std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) != 0) return std::nullopt;
  for (std::size_t i = 8; i + 12 <= b.size();) {
    const std::size_t len = static_cast<std::size_t>(b[i]) << 24 | static_cast<std::size_t>(b[i + 1]) << 16 |
                            static_cast<std::size_t>(b[i + 2]) << 8 | b[i + 3];
    if (len > b.size() - i - 12) return std::nullopt;
    if (std::memcmp(b.data() + i + 4, "iCCP", 4) == 0) {
      std::vector<std::uint8_t> out(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(i));
      out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(i + 12 + len), b.end());
      return out;
    }
    if (std::memcmp(b.data() + i + 4, "IDAT", 4) == 0) return std::nullopt;  // iCCP comes before IDAT
    i += 12 + len;
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + l;
  return out;
}

}  // namespace

cv::Mat decode_image(const std::vector<std::uint8_t>& bytes, const std::string& source, std::uint64_t max_pixels,
                     const DamagePolicy& damage) {
  if (bytes.empty()) throw Error(source + ": file is empty (0 bytes)");
  const std::span<const std::uint8_t> view(bytes);
  const ImageFormat* format = format_by_signature(view);
  if (format && !format->readable)
    throw Error(source + ": format not supported (" + format->name + "; vitattn reads " + readable_format_names() + ")");
  const auto size = read_image_size(view);
  if (size) {
    if (size->width == 0 || size->height == 0)
      throw Error(source + ": header gives an empty image (" + std::to_string(size->width) + "x" +
                  std::to_string(size->height) + ")");
    const std::uint64_t pixels = pixel_count(*size);
    if (pixels > max_pixels)
      throw Error({roles::pixel_limit, ""},
                        "image is " + std::to_string(size->width) + "x" + std::to_string(size->height) + " (" +
                            megapixels(pixels) + "), over the pixel limit of " + megapixels(max_pixels),
                        source);
  }
  if (const auto problem = container_problem(view)) throw Error(source + ": " + *problem);
  // Only what was sized above goes to OpenCV. It decodes more (DICOM through GDCM, NITF and DTED
  // through GDAL, OpenEXR when enabled, BigTIFF), but their size would go unchecked, and GDCM
  // aborts the whole process on some malformed files (found by image_fuzzer).
  if (!format) throw Error(source + ": not a readable image (unknown format or corrupt data)");
  if (!size) throw Error(source + ": corrupt " + format->name + " data (no image size in its header)");

  const auto stripped = without_png_iccp(bytes);
  const std::vector<std::uint8_t>& data = stripped ? *stripped : bytes;
  cv::Mat bgr;  // (H, W) 8-bit BGR once decoded
  DecoderMessages said;  // what libjpeg, libpng and OpenCV say about these bytes, off stderr
  if (std::strcmp(format->name, "JPEG") == 0) {
    bgr = decode_jpeg(data, said);  // libjpeg-turbo here: no imgcodecs for JPEGs (jpeg_decoder.hpp)
  } else {
    const codec_abi::Table& codecs = codec_module(source);
    codec_abi::Status status;
    if (!codecs.decode_color(data.data(), data.size(), &bgr, &status))
      throw Error(source + ": cannot decode image: " + status.message);
  }
  const std::string detail = said.lines().empty() ? "" : " (" + joined(said.lines()) + ")";
  if (bgr.empty()) throw Error(source + ": corrupt " + format->name + " data" + detail);
  if (!detail.empty()) {
    const std::string what = source + ": damaged " + format->name + " data" + detail;
    if (damage.strict)
      throw Error({roles::strict_decoding, ""}, std::string("damaged ") + format->name + " data" + detail + "; refused as damaged", source);
    if (damage.warn) damage.warn(what + "; decoded anyway, parts may look smeared or grey");
  }
  // IMREAD_COLOR should give 8-bit BGR, but OpenCV 4.6's PFM decoder returns a grey "Pf" file
  // with one channel (found by image_fuzzer). Grey is made colour here as for other formats.
  if (bgr.type() == CV_8UC1) cv::cvtColor(bgr, bgr, cv::COLOR_GRAY2BGR);
  if (bgr.type() != CV_8UC3)
    throw Error(source + ": decoded to an unexpected pixel layout (" + std::to_string(bgr.channels()) +
                " channels, depth " + std::to_string(bgr.depth()) + ")");
  if (static_cast<std::uint64_t>(bgr.total()) > max_pixels)  // formats whose header we do not parse
    throw Error({roles::pixel_limit, ""},
                      "image is " + std::to_string(bgr.cols) + "x" + std::to_string(bgr.rows) + ", over the pixel limit of " +
                          megapixels(max_pixels),
                      source);
  return bgr;
}

cv::Mat load_image(const std::filesystem::path& path, std::uint64_t max_pixels, const DamagePolicy& damage) {
  // No image within the pixel limit takes more than 8 bytes a pixel (16-bit RGBA, stored
  // raw), so a larger file is refused before it is read into memory.
  const std::uint64_t max_bytes = max_pixels > (std::numeric_limits<std::uint64_t>::max() - (64u << 20)) / 8
                                      ? std::numeric_limits<std::uint64_t>::max()
                                      : 8 * max_pixels + (64u << 20);
  return decode_image(files::read_file(path, max_bytes), files::display(path), max_pixels, damage);
}

ImageTensor preprocess(const cv::Mat& bgr, int width, int height, const Normalization& norm) {
  CV_Assert(bgr.type() == CV_8UC3);
  const bool shrinks = bgr.cols >= width && bgr.rows >= height;
  cv::Mat resized, rgb;
  cv::resize(bgr, resized, cv::Size(width, height), 0, 0, shrinks ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::cvtColor(resized, rgb, cv::COLOR_BGR2RGB);
  return normalize_rgb(rgb.ptr<std::uint8_t>(), height, width, norm);
}

ImageTensor preprocess(const cv::Mat& bgr, int img_size, const Normalization& norm) {
  return preprocess(bgr, img_size, img_size, norm);
}

}  // namespace vitattn::image
