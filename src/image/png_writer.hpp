#pragma once
// vitattn's own PNG encoder: row filters, a zlib stream from libdeflate, and the chunks
// (IHDR, IDAT, IEND). OpenCV's imencode (libpng's adaptive filters + zlib) was most of a
// batch's time: its deflate searches for repeated strings, which the filtered rows of a photo
// seldom hold, so the search costs most of the time and saves few bytes. This one codes the
// filtered rows with Huffman codes alone by default (PngOptions), in less CPU time than imencode
// for fewer bytes on the benchmark's overlays (bench/run_png_bench.sh; the figures are in
// docs/performance.md). The output is a plain 8-bit PNG any decoder reads, and the same image
// gives the same bytes every time (for a given libdeflate version).
#include <cstddef>
#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

namespace vitattn::image {

// The filter put before each row (PNG spec §9). `adaptive` picks, row by row, the one of
// None, Sub, Up and Paeth whose output has the smallest sum of |byte as signed|, libpng's
// heuristic; the others use one filter for every row.
enum class PngFilter { none, sub, up, paeth, adaptive };

struct PngOptions {
  // kHuffmanOnly: vitattn's own deflate (huffman_deflate.hpp), Huffman codes without match
  // search; 0 (stored) … 12: libdeflate at that level.
  static constexpr int kHuffmanOnly = -1;

  // Measured on the overlays (bench/run_png_bench.sh --sweep): Paeth leaves the smallest
  // residuals on photos, and with Huffman-only coding that is most of the compression.
  PngFilter filter = PngFilter::paeth;
  int level = kHuffmanOnly;
  std::size_t idat_bytes = 1 << 20;  // the zlib stream is cut into IDAT chunks of this size
};

// 8-bit grey (CV_8UC1), BGR (CV_8UC3, written as RGB) or BGRA (CV_8UC4, written as RGBA) →
// the bytes of a PNG file. The Mat may be a view with its own row stride. Throws Error
// ("PNG encoder: ...") on another type, an empty image or bad options.
std::vector<std::uint8_t> encode_png(const cv::Mat& image, const PngOptions& options = {});

// The Paeth predictor (PNG spec §9.4) of a byte from its left (a), upper (b) and upper-left
// (c) neighbours; exposed for the tests.
inline std::uint8_t paeth_predictor(int a, int b, int c) {
  const int pa = b > c ? b - c : c - b;                  // |p − a| with p = a + b − c
  const int pb = a > c ? a - c : c - a;                  // |p − b|
  const int pc = a + b > 2 * c ? a + b - 2 * c : 2 * c - a - b;  // |p − c|
  return static_cast<std::uint8_t>(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);  // ties: a, then b
}

}  // namespace vitattn::image
