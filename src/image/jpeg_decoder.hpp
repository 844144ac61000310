#pragma once
// JPEG decoding with libjpeg-turbo directly, so that a run on JPEGs never loads OpenCV's
// imgcodecs (codec_module_abi.hpp says what that costs). The pixels are cv::imdecode's with
// IMREAD_COLOR in OpenCV 4.6 (grfmt_jpeg.cpp), bit for bit: the same libjpeg with its default
// settings (JDCT_ISLOW, fancy upsampling), BGR straight from libjpeg-turbo (JCS_EXT_BGR; grey
// replicated by it), CMYK/YCCK as JCS_CMYK converted by OpenCV's formula, then the EXIF
// orientation of the first APP1 segment (when it is "Exif") applied as OpenCV's ApplyExifOrientation does.
// tests/e2e/test_decoders.py compares against python3-opencv.
#include <cstdint>
#include <opencv2/core.hpp>
#include <span>

#include "image/decoder_messages.hpp"

namespace vitattn::image {

// 8-bit BGR (H, W), or an empty Mat when libjpeg gave up (its error is then in `said`, as
// "libjpeg: …"). Warnings (corrupt data worked around) are added to `said` and the image is
// still returned. Never prints, never throws for bad data.
cv::Mat decode_jpeg(std::span<const std::uint8_t> bytes, DecoderMessages& said);

// The EXIF orientation (1–8) in a JPEG APP1 payload ("Exif\0\0" + TIFF), or 0 when absent.
int exif_orientation(std::span<const std::uint8_t> app1);

// OpenCV's ApplyExifOrientation: flips and transposes for orientations 2–8, in place.
void apply_exif_orientation(int orientation, cv::Mat& image);

}  // namespace vitattn::image
