#include "image/jpeg_decoder.hpp"

#include <csetjmp>
#include <cstdio>
#include <string>
// clang-format off
#include <jpeglib.h>  // after <cstdio>: it uses FILE
// clang-format on

namespace vitattn::image {
namespace {

// libjpeg's error manager, with messages kept for the file and fatal errors returning to
// decode_into's setjmp instead of exit().
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  DecoderMessages* said;
};

void keep_message(j_common_ptr cinfo) {
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  reinterpret_cast<ErrorManager*>(cinfo->err)->said->add(std::string("libjpeg: ") + text);
}

[[noreturn]] void jump_out(j_common_ptr cinfo) {
  (*cinfo->err->output_message)(cinfo);
  std::longjmp(reinterpret_cast<ErrorManager*>(cinfo->err)->jump, 1);
}

// OpenCV 4.6's icvCvt_CMYK2BGR_8u_C4C3R, one row.
void cmyk_row_to_bgr(const std::uint8_t* cmyk, std::uint8_t* bgr, int width) {
  for (int i = 0; i < width; ++i, bgr += 3, cmyk += 4) {
    const int c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
    bgr[2] = static_cast<std::uint8_t>(k - ((255 - c) * k >> 8));
    bgr[1] = static_cast<std::uint8_t>(k - ((255 - m) * k >> 8));
    bgr[0] = static_cast<std::uint8_t>(k - ((255 - y) * k >> 8));
  }
}

std::uint32_t read_u(const std::uint8_t* p, int n, bool little) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint32_t>(p[little ? i : n - 1 - i]) << (8 * i);
  return v;
}

// The decode proper. Only plain data lives in this frame across setjmp/longjmp: the Mat is
// allocated by the caller's `allocate` before any row is written, and freed by the caller.
// Returns false when libjpeg gave up (its message is in `said`).
bool decode_into(std::span<const std::uint8_t> bytes, DecoderMessages& said, cv::Mat& out, int& orientation) {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  err.said = &said;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.output_message = keep_message;
  err.pub.error_exit = jump_out;
  JSAMPARRAY cmyk_row = nullptr;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(&cinfo, TRUE);
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next)
    if (m->marker == JPEG_APP0 + 1) {  // the first APP1 only, as OpenCV reads it
      orientation = exif_orientation({m->data, m->data_length});
      break;
    }
  const bool cmyk = cinfo.num_components == 4;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_EXT_BGR;
  jpeg_start_decompress(&cinfo);
  try {
    out.create(static_cast<int>(cinfo.output_height), static_cast<int>(cinfo.output_width), CV_8UC3);
  } catch (...) {  // out of memory: libjpeg's own memory is freed before it goes on
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  if (cmyk) cmyk_row = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE, cinfo.output_width * 4, 1);
  while (cinfo.output_scanline < cinfo.output_height) {
    std::uint8_t* row = out.ptr<std::uint8_t>(static_cast<int>(cinfo.output_scanline));
    if (cmyk) {
      jpeg_read_scanlines(&cinfo, cmyk_row, 1);
      cmyk_row_to_bgr(cmyk_row[0], row, out.cols);
    } else {
      JSAMPROW rows[1] = {row};
      jpeg_read_scanlines(&cinfo, rows, 1);
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

int exif_orientation(std::span<const std::uint8_t> app1) {
  constexpr std::size_t kHeader = 6;  // "Exif\0\0"
  if (app1.size() < kHeader + 8 || std::string(reinterpret_cast<const char*>(app1.data()), 4) != "Exif") return 0;
  const std::span<const std::uint8_t> tiff = app1.subspan(kHeader);
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 0;
  const std::uint32_t ifd = read_u(tiff.data() + 4, 4, little);
  if (ifd > tiff.size() || tiff.size() - ifd < 2) return 0;
  const std::uint32_t entries = read_u(tiff.data() + ifd, 2, little);
  for (std::uint32_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + 12 * static_cast<std::size_t>(i);
    if (at + 12 > tiff.size()) return 0;
    if (read_u(tiff.data() + at, 2, little) != 0x0112) continue;
    const std::uint32_t value = read_u(tiff.data() + at + 8, 2, little);  // SHORT, left-justified
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 0;
  }
  return 0;
}

void apply_exif_orientation(int orientation, cv::Mat& image) {
  switch (orientation) {
    case 2: cv::flip(image, image, 1); break;
    case 3: cv::flip(image, image, -1); break;
    case 4: cv::flip(image, image, 0); break;
    case 5: cv::transpose(image, image); break;
    case 6: cv::transpose(image, image); cv::flip(image, image, 1); break;
    case 7: cv::transpose(image, image); cv::flip(image, image, -1); break;
    case 8: cv::transpose(image, image); cv::flip(image, image, 0); break;
    default: break;
  }
}

cv::Mat decode_jpeg(std::span<const std::uint8_t> bytes, DecoderMessages& said) {
  cv::Mat bgr;  // (H, W) 8-bit BGR
  int orientation = 0;
  if (!decode_into(bytes, said, bgr, orientation)) return {};
  apply_exif_orientation(orientation, bgr);
  return bgr;
}

}  // namespace vitattn::image
