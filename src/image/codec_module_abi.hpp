#pragma once
// The boundary between vitattn and libvitattn_codecs.so, the module that holds OpenCV's
// imgcodecs. imgcodecs links GDAL, GDCM, OpenEXR, libtiff, OpenJPEG, … (about 120 shared
// libraries, whose loading would be most of every start's CPU), though vitattn decodes JPEG itself
// (jpeg_decoder.hpp) and writes PNG itself (png_writer.hpp). The binary loads the module
// (codec_module.cpp) only when it meets another format (PNG, WebP, BMP, TIFF, PNM/PFM, Sun
// raster, HDR, JPEG 2000) or writes JPEG/WebP, so a run on JPEGs never pays for it.
// Plain C types and cv::Mat (the same libopencv_core on both sides) cross it; no exception does.
#include <cstddef>
#include <cstdint>

#include "image/module_status.hpp"

namespace cv {
class Mat;
}

namespace vitattn::image::codec_abi {

// Raised whenever Table changes: a module of another version is refused with a clear error.
inline constexpr int kVersion = 1;
inline constexpr const char* kFileName = "libvitattn_codecs.so";
inline constexpr const char* kEntryPoint = "vitattn_codec_module";

// Why a call failed (module_status.hpp).
using Status = ModuleStatus;

struct Table {
  int version;  // kVersion; first, so that any module's version can be read
  // cv::imdecode(bytes, IMREAD_COLOR) into *bgr; 0 when an exception was thrown (status says it).
  // An empty *bgr with 1 is OpenCV's "could not decode".
  int (*decode_color)(const std::uint8_t* bytes, std::size_t size, cv::Mat* bgr, Status* status);
  // cv::imencode(ext, image, out, {quality flag of ext, quality}); 1 encoded, 0 failed.
  int (*encode)(const char* ext, const cv::Mat* image, int quality, void (*sink)(void* ctx, const std::uint8_t*, std::size_t),
                void* ctx, Status* status);
};

}  // namespace vitattn::image::codec_abi

// The module's one entry point: its table (static, lives as long as the module). Declared weak
// so that a program that links the implementation in (the tests, the fuzzers: codec_module.cpp
// uses it without dlopen) and one that does not (vitattn) share this header.
extern "C" const vitattn::image::codec_abi::Table* vitattn_codec_module() __attribute__((weak));
