#include "image/png_writer.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "image/huffman_deflate.hpp"

namespace vitattn::image {
namespace {

using Byte = std::uint8_t;

constexpr Byte kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr std::size_t kMaxChunk = 0x7fffffff;  // a chunk's length is at most 2^31 − 1 (§5.3)

[[noreturn]] void fail(const std::string& what) { throw Error("PNG encoder: " + what); }

Byte* put_u32(Byte* at, std::uint32_t v) {  // big-endian, as every PNG number
  at[0] = static_cast<Byte>(v >> 24);
  at[1] = static_cast<Byte>(v >> 16);
  at[2] = static_cast<Byte>(v >> 8);
  at[3] = static_cast<Byte>(v);
  return at + 4;
}

// length, type, data, CRC-32 of type + data (§5.3); returns the end of the chunk
Byte* put_chunk(Byte* at, const char (&type)[5], const Byte* data, std::size_t n) {
  at = put_u32(at, static_cast<std::uint32_t>(n));
  Byte* const typed = at;
  std::memcpy(at, type, 4);
  if (n > 0) std::memcpy(at + 4, data, n);
  return put_u32(at + 4 + n, libdeflate_crc32(0, typed, 4 + n));
}

// The filters of §9.2 over one row of n bytes, bpp bytes per pixel. `prev` is the row above
// (all zeros for the first row, as the spec says). Each works channel by channel, so it gives
// the same bytes on BGR as on RGB, only in the other order: rows are filtered as OpenCV holds
// them and the channels swapped after.
void filter_sub(const Byte* __restrict cur, Byte* __restrict out, std::size_t n, std::size_t bpp) {
  for (std::size_t i = 0; i < bpp; ++i) out[i] = cur[i];
  for (std::size_t i = bpp; i < n; ++i) out[i] = static_cast<Byte>(cur[i] - cur[i - bpp]);
}

void filter_up(const Byte* __restrict cur, const Byte* __restrict prev, Byte* __restrict out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<Byte>(cur[i] - prev[i]);
}

// The predictor written without branches (the same choice as paeth_predictor, ties: a, then
// b), so the compiler turns the loop into vector selects: the encoder reads only original
// pixels, so unlike the decoder no byte waits on the one before.
void filter_paeth(const Byte* __restrict cur, const Byte* __restrict prev, Byte* __restrict out, std::size_t n,
                  std::size_t bpp) {
  for (std::size_t i = 0; i < bpp; ++i) out[i] = static_cast<Byte>(cur[i] - prev[i]);  // a = c = 0: predicts b
  for (std::size_t i = bpp; i < n; ++i) {
    const std::int16_t a = cur[i - bpp], b = prev[i], c = prev[i - bpp];
    const std::int16_t pa = static_cast<std::int16_t>(b > c ? b - c : c - b);
    const std::int16_t pb = static_cast<std::int16_t>(a > c ? a - c : c - a);
    const std::int16_t ab_c = static_cast<std::int16_t>(a + b - 2 * c);
    const std::int16_t pc = static_cast<std::int16_t>(ab_c < 0 ? -ab_c : ab_c);
    const std::int16_t bc = pb <= pc ? b : c;
    const std::int16_t predicted = pa <= pb && pa <= pc ? a : bc;
    out[i] = static_cast<Byte>(cur[i] - predicted);
  }
}

// BGR → RGB, BGRA → RGBA in place; grey stays as it is.
void swap_blue_red(Byte* row, std::size_t n, std::size_t bpp) {
  if (bpp < 3) return;
  for (std::size_t i = 0; i + 2 < n; i += bpp) std::swap(row[i], row[i + 2]);
}

// libpng's measure of how well a filtered row will compress: the bytes read as signed, summed
// by magnitude. Small residuals around zero are what deflate codes shortest.
std::uint64_t cost(const Byte* row, std::size_t n) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += row[i] < 128 ? row[i] : 256u - row[i];
  return sum;
}

enum FilterType : Byte { kNone = 0, kSub = 1, kUp = 2, kPaeth = 4 };

// Writes the filter-type byte and the filtered row at `out` (n + 1 bytes).
void filter_row(PngFilter choice, const Byte* cur, const Byte* prev, Byte* out, std::size_t n, std::size_t bpp,
                std::array<std::vector<Byte>, 3>& scratch) {
  switch (choice) {
    case PngFilter::none:
      out[0] = kNone;
      std::memcpy(out + 1, cur, n);
      return;
    case PngFilter::sub:
      out[0] = kSub;
      filter_sub(cur, out + 1, n, bpp);
      return;
    case PngFilter::up:
      out[0] = kUp;
      filter_up(cur, prev, out + 1, n);
      return;
    case PngFilter::paeth:
      out[0] = kPaeth;
      filter_paeth(cur, prev, out + 1, n, bpp);
      return;
    case PngFilter::adaptive: break;
  }
  // Each candidate into its own buffer; the cheapest is copied out (ties: the lower type).
  filter_sub(cur, scratch[0].data(), n, bpp);
  filter_up(cur, prev, scratch[1].data(), n);
  filter_paeth(cur, prev, scratch[2].data(), n, bpp);
  const Byte* best = cur;
  Byte type = kNone;
  std::uint64_t best_cost = cost(cur, n);
  const Byte types[3] = {kSub, kUp, kPaeth};
  for (std::size_t k = 0; k < 3; ++k) {
    const std::uint64_t c = cost(scratch[k].data(), n);
    if (c < best_cost) {
      best_cost = c;
      best = scratch[k].data();
      type = types[k];
    }
  }
  out[0] = type;
  std::memcpy(out + 1, best, n);
}

struct FreeCompressor {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

// Rows [y0, y1) filtered, each behind its filter-type byte, into `out` ((y1 − y0)·(1 + W·C) bytes).
void filter_rows(const cv::Mat& image, PngFilter choice, int y0, int y1, Byte* out, const Byte* zeros,
                 std::array<std::vector<Byte>, 3>& scratch) {
  const auto bpp = static_cast<std::size_t>(image.channels());
  const std::size_t n = static_cast<std::size_t>(image.cols) * bpp;
  for (int y = y0; y < y1; ++y, out += n + 1) {
    filter_row(choice, image.ptr<Byte>(y), y > 0 ? image.ptr<Byte>(y - 1) : zeros, out, n, bpp, scratch);
    swap_blue_red(out + 1, n, bpp);
  }
}

std::array<std::vector<Byte>, 3> filter_scratch(PngFilter choice, std::size_t n) {
  std::array<std::vector<Byte>, 3> scratch;
  if (choice == PngFilter::adaptive)
    for (auto& s : scratch) s.resize(n);
  return scratch;
}

// The filtered rows, each behind its filter-type byte: (H, 1 + W·C) bytes, what IDAT compresses.
std::vector<Byte> filtered_rows(const cv::Mat& image, PngFilter choice) {
  const std::size_t n = static_cast<std::size_t>(image.cols) * static_cast<std::size_t>(image.channels());
  std::vector<Byte> rows(static_cast<std::size_t>(image.rows) * (n + 1));
  const std::vector<Byte> zeros(n, 0);
  auto scratch = filter_scratch(choice, n);
  filter_rows(image, choice, 0, image.rows, rows.data(), zeros.data(), scratch);
  return rows;
}

// Rows go to the Huffman coder in blocks of about this many bytes, each filtered into one
// reused buffer (it stays in the L2 cache between filtering and coding) and given its own
// code, which follows the image's content from block to block.
constexpr std::size_t kBlockBytes = std::size_t{1} << 17;

struct ZlibStream {
  std::unique_ptr<Byte[]> bytes;  // not zero-filled: only the pages deflate writes are ever touched
  std::size_t size = 0;
};

ZlibStream zlib_stream(const std::vector<Byte>& rows, int level) {
  const std::unique_ptr<libdeflate_compressor, FreeCompressor> c(libdeflate_alloc_compressor(level));
  if (!c) fail("cannot set up libdeflate at level " + std::to_string(level));
  const std::size_t bound = libdeflate_zlib_compress_bound(c.get(), rows.size());
  ZlibStream z{std::unique_ptr<Byte[]>(new Byte[bound]), 0};
  z.size = libdeflate_zlib_compress(c.get(), rows.data(), rows.size(), z.bytes.get(), bound);
  if (z.size == 0) fail("libdeflate could not compress the image");  // cannot happen with the bound's room
  return z;
}


ZlibStream huffman_zlib_stream(const cv::Mat& image, PngFilter choice) {
  const std::size_t n = static_cast<std::size_t>(image.cols) * static_cast<std::size_t>(image.channels());
  const auto rows_per_block = static_cast<int>(std::max<std::size_t>(1, kBlockBytes / (n + 1)));
  const auto n_blocks = static_cast<std::size_t>((image.rows + rows_per_block - 1) / rows_per_block);
  HuffmanZlibWriter writer(static_cast<std::size_t>(image.rows) * (n + 1), n_blocks);
  std::unique_ptr<Byte[]> block(new Byte[static_cast<std::size_t>(rows_per_block) * (n + 1)]);
  const std::vector<Byte> zeros(n, 0);
  auto scratch = filter_scratch(choice, n);
  for (int y0 = 0; y0 < image.rows; y0 += rows_per_block) {
    const int y1 = std::min(image.rows, y0 + rows_per_block);
    filter_rows(image, choice, y0, y1, block.get(), zeros.data(), scratch);
    writer.add_block(block.get(), static_cast<std::size_t>(y1 - y0) * (n + 1), y1 == image.rows);
  }
  const std::size_t size = writer.size();
  return ZlibStream{writer.take(), size};
}

}  // namespace

std::vector<std::uint8_t> encode_png(const cv::Mat& image, const PngOptions& options) {
  if (image.empty()) fail("empty image");
  if (image.depth() != CV_8U || image.dims != 2 || (image.channels() != 1 && image.channels() != 3 && image.channels() != 4))
    fail("only 8-bit grey, BGR and BGRA images are written (got type " + std::to_string(image.type()) + ")");
  if (options.level < PngOptions::kHuffmanOnly || options.level > 12)
    fail("level " + std::to_string(options.level) + " is not in -1…12");
  if (options.idat_bytes == 0 || options.idat_bytes > kMaxChunk) fail("IDAT chunk size out of range");

  const ZlibStream z = options.level == PngOptions::kHuffmanOnly ? huffman_zlib_stream(image, options.filter)
                                                                 : zlib_stream(filtered_rows(image, options.filter), options.level);

  // IHDR: width, height, bit depth 8, colour type (0 grey, 2 RGB, 6 RGBA), compression 0,
  // filter method 0, no interlace (§11.2.2)
  Byte ihdr[13] = {};
  put_u32(put_u32(ihdr, static_cast<std::uint32_t>(image.cols)), static_cast<std::uint32_t>(image.rows));
  ihdr[8] = 8;
  ihdr[9] = image.channels() == 1 ? 0 : image.channels() == 3 ? 2 : 6;

  const std::size_t chunks = (z.size + options.idat_bytes - 1) / options.idat_bytes;
  std::vector<Byte> png(sizeof kSignature + (12 + sizeof ihdr) + (12 * chunks + z.size) + 12);
  Byte* at = png.data();
  std::memcpy(at, kSignature, sizeof kSignature);
  at = put_chunk(at + sizeof kSignature, "IHDR", ihdr, sizeof ihdr);
  for (std::size_t from = 0; from < z.size; from += options.idat_bytes)
    at = put_chunk(at, "IDAT", z.bytes.get() + from, std::min(options.idat_bytes, z.size - from));
  put_chunk(at, "IEND", nullptr, 0);
  return png;
}

}  // namespace vitattn::image
