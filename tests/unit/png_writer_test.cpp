// vitattn's PNG encoder, checked against libpng (through cv::imdecode) and against the spec
// written out here independently: chunk layout, CRC-32, IHDR fields, filter bytes, Paeth.
#include "image/png_writer.hpp"

#include <gtest/gtest.h>
#include <libdeflate.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "image/huffman_deflate.hpp"

namespace vitattn::image {
namespace {

using Bytes = std::vector<std::uint8_t>;
constexpr PngFilter kFilters[] = {PngFilter::none, PngFilter::sub, PngFilter::up, PngFilter::paeth, PngFilter::adaptive};

enum class Content { random, flat, gradient };

cv::Mat make_image(int w, int h, int channels, Content content, std::mt19937& rng) {
  cv::Mat m(h, w, CV_8UC(channels));
  std::uniform_int_distribution<int> byte(0, 255);
  const int base = byte(rng);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * channels; ++x) {
      const int v = content == Content::random ? byte(rng) : content == Content::flat ? base : (base + 3 * x + 5 * y) % 256;
      m.ptr<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(v);
    }
  return m;
}

cv::Mat decode(const Bytes& png) { return cv::imdecode(png, cv::IMREAD_UNCHANGED); }

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0.0;
}

std::uint32_t be32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

// CRC-32 bit by bit, as the spec's annex gives it: independent of libdeflate's tables.
std::uint32_t naive_crc32(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = c & 1u ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

struct Chunk {
  std::string type;
  Bytes data;
};

// Splits a PNG into its chunks, checking the signature and every CRC on the way.
std::vector<Chunk> chunks_of(const Bytes& png) {
  static const std::uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<Chunk> out;
  EXPECT_GE(png.size(), 8u);
  EXPECT_EQ(0, std::memcmp(png.data(), sig, 8));
  for (std::size_t at = 8; at < png.size();) {
    if (at + 12 > png.size()) {
      ADD_FAILURE() << "truncated chunk at " << at;
      break;
    }
    const std::uint32_t n = be32(&png[at]);
    if (at + 12 + n > png.size()) {
      ADD_FAILURE() << "chunk length runs past the end at " << at;
      break;
    }
    EXPECT_EQ(be32(&png[at + 8 + n]), naive_crc32(&png[at + 4], 4 + n)) << "CRC of the chunk at " << at;
    out.push_back({std::string(reinterpret_cast<const char*>(&png[at + 4]), 4), Bytes(&png[at + 8], &png[at + 8 + n])});
    at += 12 + n;
  }
  return out;
}

// The zlib stream of the IDAT chunks → the filtered rows (empty when it is not `size` bytes).
Bytes inflate(const Bytes& z, std::size_t size) {
  Bytes raw(size);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  std::size_t got = 0;
  const auto result = libdeflate_zlib_decompress(d, z.data(), z.size(), raw.data(), raw.size(), &got);
  libdeflate_free_decompressor(d);
  if (result != LIBDEFLATE_SUCCESS || got != size) return {};
  return raw;
}

// The Paeth predictor as §9.4 writes it, with p = a + b − c.
int spec_paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  if (pb <= pc) return b;
  return c;
}

TEST(PngWriter, PaethPredictorFollowsTheSpecForEveryTriple) {
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 256; ++b)
      for (int c = 0; c < 256; ++c)
        ASSERT_EQ(paeth_predictor(a, b, c), spec_paeth(a, b, c)) << a << " " << b << " " << c;
}

// The property: whatever the size, channels, contents and filter, libpng gives back exactly
// the pixels that went in (BGR in, RGB in the file, BGR out of OpenCV).
TEST(PngWriter, RandomImagesRoundTripThroughLibpng) {
  std::mt19937 rng(12);
  std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 7}, {3, 1}, {17, 5}, {1001, 3}, {8000, 3}, {2, 2}};
  std::uniform_int_distribution<int> side(1, 70);
  for (int i = 0; i < 20; ++i) sizes.emplace_back(side(rng), side(rng) / 4 + 1);
  int cases = 0;
  for (const auto& [w, h] : sizes)
    for (int channels : {1, 3, 4})
      for (Content content : {Content::random, Content::flat, Content::gradient})
        for (PngFilter f : kFilters) {
          const cv::Mat img = make_image(w, h, channels, content, rng);
          const int level = cases % 5 - 1;  // −1 (the own Huffman-only deflate), then libdeflate 0 (stored) … 3
          const Bytes png = encode_png(img, PngOptions{f, level, std::size_t{1} << 20});
          const cv::Mat back = decode(png);
          ASSERT_TRUE(same_pixels(img, back)) << w << "x" << h << "x" << channels << " content "
                                              << static_cast<int>(content) << " filter " << static_cast<int>(f);
          ++cases;
        }
  EXPECT_EQ(cases, static_cast<int>(sizes.size()) * 3 * 3 * 5);
}

TEST(PngWriter, AViewWithItsOwnRowStrideIsWrittenAsItsPixels) {
  std::mt19937 rng(3);
  const cv::Mat big = make_image(40, 30, 3, Content::random, rng);
  const cv::Mat view = big(cv::Rect(5, 7, 13, 11));  // not continuous: rows 40 pixels apart
  ASSERT_FALSE(view.isContinuous());
  for (PngFilter f : kFilters)
    for (int level : {PngOptions::kHuffmanOnly, 1})
      EXPECT_TRUE(same_pixels(view, decode(encode_png(view, {f, level, 1 << 20}))));
}

TEST(PngWriter, ChunksFollowTheSpec) {
  std::mt19937 rng(5);
  for (int channels : {1, 3, 4})
    for (PngFilter f : kFilters) {
      const int w = 23, h = 9;
      const cv::Mat img = make_image(w, h, channels, Content::random, rng);
      const Bytes png = encode_png(img, PngOptions{f, 1, 100});  // small IDAT chunks: several of them
      const auto chunks = chunks_of(png);
      ASSERT_GE(chunks.size(), 4u);
      const Chunk& ihdr = chunks.front();
      ASSERT_EQ(ihdr.type, "IHDR");
      ASSERT_EQ(ihdr.data.size(), 13u);
      EXPECT_EQ(be32(&ihdr.data[0]), static_cast<std::uint32_t>(w));
      EXPECT_EQ(be32(&ihdr.data[4]), static_cast<std::uint32_t>(h));
      EXPECT_EQ(ihdr.data[8], 8);                                            // bit depth
      EXPECT_EQ(ihdr.data[9], channels == 1 ? 0 : channels == 3 ? 2 : 6);   // colour type
      EXPECT_EQ(ihdr.data[10] + ihdr.data[11] + ihdr.data[12], 0);          // deflate, filter method 0, no interlace
      EXPECT_EQ(chunks.back().type, "IEND");
      EXPECT_TRUE(chunks.back().data.empty());
      Bytes z;
      for (std::size_t i = 1; i + 1 < chunks.size(); ++i) {
        EXPECT_EQ(chunks[i].type, "IDAT");
        EXPECT_LE(chunks[i].data.size(), 100u);
        z.insert(z.end(), chunks[i].data.begin(), chunks[i].data.end());
      }
      // The zlib stream holds each row behind the filter type asked for.
      const std::size_t row = 1 + static_cast<std::size_t>(w * channels);
      const Bytes raw = inflate(z, static_cast<std::size_t>(h) * row);
      ASSERT_EQ(raw.size(), static_cast<std::size_t>(h) * row);
      for (int y = 0; y < h; ++y) {
        const int type = raw[static_cast<std::size_t>(y) * row];
        switch (f) {
          case PngFilter::none: EXPECT_EQ(type, 0); break;
          case PngFilter::sub: EXPECT_EQ(type, 1); break;
          case PngFilter::up: EXPECT_EQ(type, 2); break;
          case PngFilter::paeth: EXPECT_EQ(type, 4); break;
          case PngFilter::adaptive: EXPECT_TRUE(type == 0 || type == 1 || type == 2 || type == 4) << type; break;
        }
      }
      EXPECT_TRUE(same_pixels(img, decode(png)));
    }
}

TEST(PngWriter, AdaptivePicksTheFilterThatPredictsTheRow) {
  // Each row a ramp along x starting at 0 or 128 in turn: Sub leaves 1s (Paeth too, but for a
  // costlier first byte; a tie goes to the lower type), Up leaves 128s.
  cv::Mat ramps(6, 50, CV_8UC1);
  for (int y = 0; y < ramps.rows; ++y)
    for (int x = 0; x < ramps.cols; ++x) ramps.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>((y % 2) * 128 + x);
  // Every row the same noise: Up leaves all 0s from the second row on (Paeth ties it).
  std::mt19937 rng(9);
  cv::Mat repeated(6, 50, CV_8UC1);
  for (int x = 0; x < repeated.cols; ++x) repeated.at<std::uint8_t>(0, x) = static_cast<std::uint8_t>(rng() % 256);
  for (int y = 1; y < repeated.rows; ++y) repeated.row(0).copyTo(repeated.row(y));
  for (const auto& [img, want] : {std::pair{ramps, 1}, std::pair{repeated, 2}}) {
    const Bytes png = encode_png(img, {PngFilter::adaptive, 1, 1 << 20});
    const auto chunks = chunks_of(png);
    ASSERT_EQ(chunks.size(), 3u);
    const std::size_t row = 1 + static_cast<std::size_t>(img.cols);
    const Bytes raw = inflate(chunks[1].data, static_cast<std::size_t>(img.rows) * row);
    for (int y = 1; y < img.rows; ++y) EXPECT_EQ(raw[static_cast<std::size_t>(y) * row], want) << "row " << y;
    EXPECT_TRUE(same_pixels(img, decode(png)));
  }
}

// Each filter as §9.2 writes it (byte by byte, on the RGB pixels the file holds), against what
// the zlib stream carries, with either deflate. Wide enough for several Huffman blocks.
TEST(PngWriter, FilteredBytesFollowTheSpec) {
  std::mt19937 rng(31);
  for (int channels : {1, 3, 4})
    for (PngFilter f : {PngFilter::none, PngFilter::sub, PngFilter::up, PngFilter::paeth})
      for (int level : {PngOptions::kHuffmanOnly, 1}) {
        const int w = 2999, h = channels == 1 ? 150 : 50;  // several 128 KiB blocks
        cv::Mat img = make_image(w, h, channels, Content::gradient, rng);
        cv::Mat noise = make_image(w, h, channels, Content::random, rng);
        img += noise / 8;  // residuals of every size, ties in Paeth too
        const Bytes png = encode_png(img, {f, level, 1 << 20});
        const auto chunks = chunks_of(png);
        Bytes z;
        for (std::size_t i = 1; i + 1 < chunks.size(); ++i) z.insert(z.end(), chunks[i].data.begin(), chunks[i].data.end());
        const std::size_t n = static_cast<std::size_t>(w * channels), row = 1 + n;
        const Bytes raw = inflate(z, static_cast<std::size_t>(h) * row);
        ASSERT_EQ(raw.size(), static_cast<std::size_t>(h) * row) << "filter " << static_cast<int>(f) << " level " << level;
        cv::Mat rgb;
        if (channels == 1) rgb = img;
        else cv::cvtColor(img, rgb, channels == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_BGRA2RGBA);
        const int type = f == PngFilter::none ? 0 : f == PngFilter::sub ? 1 : f == PngFilter::up ? 2 : 4;
        for (int y = 0; y < h; ++y) {
          ASSERT_EQ(raw[static_cast<std::size_t>(y) * row], type);
          const std::uint8_t* cur = rgb.ptr<std::uint8_t>(y);
          const std::uint8_t* up = y > 0 ? rgb.ptr<std::uint8_t>(y - 1) : nullptr;
          for (std::size_t i = 0; i < n; ++i) {
            const int x = cur[i], a = i >= static_cast<std::size_t>(channels) ? cur[i - static_cast<std::size_t>(channels)] : 0;
            const int b = up ? up[i] : 0, c = up && i >= static_cast<std::size_t>(channels) ? up[i - static_cast<std::size_t>(channels)] : 0;
            const int predicted = type == 0 ? 0 : type == 1 ? a : type == 2 ? b : spec_paeth(a, b, c);
            ASSERT_EQ(raw[static_cast<std::size_t>(y) * row + 1 + i], static_cast<std::uint8_t>(x - predicted))
                << "filter " << type << " level " << level << " channels " << channels << " at (" << y << ", " << i << ")";
          }
        }
        EXPECT_TRUE(same_pixels(img, decode(png)));
      }
}

// Huffman code lengths: a complete code (Kraft sum exactly 1, which inflate requires), never
// deeper than the limit, and as short in total as Huffman's own when the limit does not bind
// (the cost computed independently: the sum of the merged weights).
TEST(PngWriter, HuffmanCodeLengthsAreCompleteLimitedAndOptimal) {
  auto merged_cost = [](std::vector<std::uint64_t> w) {
    std::uint64_t cost = 0;
    while (w.size() > 1) {
      std::sort(w.begin(), w.end(), std::greater<>());
      const std::uint64_t a = w.back();
      w.pop_back();
      const std::uint64_t b = w.back();
      w.pop_back();
      cost += a + b;
      w.push_back(a + b);
    }
    return cost;
  };
  std::mt19937 rng(8);
  std::vector<std::vector<std::uint32_t>> cases;
  std::vector<std::uint32_t> fib(257, 0);  // Fibonacci counts: an unlimited code would be 30+ deep
  fib[0] = fib[1] = 1;
  for (int i = 2; i < 32; ++i) fib[static_cast<std::size_t>(i)] = fib[static_cast<std::size_t>(i - 1)] + fib[static_cast<std::size_t>(i - 2)];
  cases.push_back(fib);
  cases.push_back(std::vector<std::uint32_t>(257, 0));                   // nothing used: two get a code anyway
  cases.push_back(std::vector<std::uint32_t>(257, 0));
  cases.back()[256] = 1;                                                   // one used
  cases.push_back(std::vector<std::uint32_t>(257, 5));                   // all equal
  for (int k = 0; k < 20; ++k) {
    std::vector<std::uint32_t> c(257);
    std::geometric_distribution<int> g(0.02 + 0.04 * k);
    for (auto& v : c) v = static_cast<std::uint32_t>(g(rng)) * static_cast<std::uint32_t>(rng() % 3);
    cases.push_back(c);
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& counts = cases[i];
    std::uint8_t len[257];
    huffman_code_lengths(counts.data(), 257, 15, len);
    double kraft = 0;
    int coded = 0;
    std::uint64_t cost = 0;
    std::vector<std::uint64_t> used;
    for (int s = 0; s < 257; ++s) {
      ASSERT_LE(len[s], 15) << "case " << i;
      if (counts[static_cast<std::size_t>(s)] > 0) {
        ASSERT_GT(len[s], 0) << "case " << i << ": a used symbol has no code";
        used.push_back(counts[static_cast<std::size_t>(s)]);
        cost += std::uint64_t{counts[static_cast<std::size_t>(s)]} * len[s];
      }
      if (len[s] > 0) {
        kraft += std::ldexp(1.0, -len[s]);
        ++coded;
      }
    }
    EXPECT_EQ(kraft, 1.0) << "case " << i;
    EXPECT_GE(coded, 2) << "case " << i;
    if (i >= 3) {  // Fibonacci's limit binds: not optimal there
      EXPECT_EQ(cost, merged_cost(used)) << "case " << i;
    }
  }
}

TEST(PngWriter, SameImageGivesTheSameBytes) {
  std::mt19937 rng(1);
  const cv::Mat img = make_image(301, 17, 3, Content::random, rng);
  EXPECT_EQ(encode_png(img), encode_png(img.clone()));
}

TEST(PngWriter, RefusesWhatItCannotWrite) {
  EXPECT_THROW(encode_png(cv::Mat()), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_16UC3, cv::Scalar(1))), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_8UC2, cv::Scalar(1))), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_32FC1, cv::Scalar(1))), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_8UC3), {PngFilter::up, 13, 1 << 20}), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_8UC3), {PngFilter::up, -2, 1 << 20}), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_8UC3), {PngFilter::up, 1, 0}), Error);
}

}  // namespace
}  // namespace vitattn::image
