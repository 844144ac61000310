// libvitattn_codecs.so: cv::imdecode and cv::imencode behind the plain table of
// codec_module_abi.hpp. Only this file links opencv_imgcodecs. No exception leaves it: each
// function catches at the boundary and says why in a Status. What libjpeg, libpng and OpenCV's
// logger print while it decodes is caught by the binary's decoder_messages.cpp (the binary's
// jpeg_std_error and png_create_read_struct come first in the dynamic linker's lookup).
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "image/codec_module_abi.hpp"
#include "image/module_guard.hpp"

namespace {
using vitattn::image::codec_abi::Status;
using vitattn::image::codec_abi::Table;
using vitattn::image::guarded;

int decode_color(const std::uint8_t* bytes, std::size_t size, cv::Mat* bgr, Status* status) {
  return guarded(status, 0, "codec module", [&] {
    // A non-owning Mat over the caller's bytes: no copy.
    const cv::Mat buf(1, static_cast<int>(size), CV_8U, const_cast<std::uint8_t*>(bytes));
    *bgr = cv::imdecode(buf, cv::IMREAD_COLOR);
    return 1;
  });
}

int encode(const char* ext, const cv::Mat* image, int quality, void (*sink)(void*, const std::uint8_t*, std::size_t),
           void* ctx, Status* status) {
  return guarded(status, 0, "codec module", [&] {
    const int flag = std::string(ext) == ".webp" ? cv::IMWRITE_WEBP_QUALITY : cv::IMWRITE_JPEG_QUALITY;
    std::vector<std::uint8_t> out;
    if (!cv::imencode(ext, *image, out, {flag, quality})) return 0;
    sink(ctx, out.data(), out.size());
    return 1;
  });
}

constexpr Table kTable = {vitattn::image::codec_abi::kVersion, decode_color, encode};

}  // namespace

extern "C" __attribute__((visibility("default"))) const Table* vitattn_codec_module() { return &kTable; }
