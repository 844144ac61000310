#include "image/image_header.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace vitattn::image {
namespace {

using Bytes = std::span<const std::uint8_t>;

std::uint32_t be16(Bytes b, std::size_t i) { return static_cast<std::uint32_t>(b[i] << 8 | b[i + 1]); }
std::uint32_t le16(Bytes b, std::size_t i) { return static_cast<std::uint32_t>(b[i] | b[i + 1] << 8); }
std::uint32_t be32(Bytes b, std::size_t i) { return be16(b, i) << 16 | be16(b, i + 2); }
std::uint32_t le32(Bytes b, std::size_t i) { return le16(b, i) | le16(b, i + 2) << 16; }
std::uint32_t le24(Bytes b, std::size_t i) { return le16(b, i) | static_cast<std::uint32_t>(b[i + 2]) << 16; }

bool starts_with(Bytes b, const char* magic, std::size_t n, std::size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

std::optional<ImageSize> png_size(Bytes b) {
  if (b.size() < 24 || !starts_with(b, "IHDR", 4, 12)) return std::nullopt;
  return ImageSize{be32(b, 16), be32(b, 20)};
}

// Walks the JPEG marker segments up to the first frame header (SOF) or scan (SOS).
struct JpegWalk {
  std::optional<ImageSize> size;      // from the first SOF
  std::optional<std::size_t> scan;    // offset of the first SOS marker
};

JpegWalk walk_jpeg(Bytes b) {
  JpegWalk w;
  std::size_t i = 2;
  while (i + 4 <= b.size()) {
    if (b[i] != 0xFF) return w;
    const std::uint8_t marker = b[i + 1];
    if (marker == 0xFF) { ++i; continue; }  // fill byte
    if ((marker >= 0xD0 && marker <= 0xD8) || marker == 0x01) { i += 2; continue; }  // no length
    const std::uint32_t len = be16(b, i + 2);
    if (marker == 0xDA) { w.scan = i; return w; }
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (!w.size && marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC &&
        i + 9 <= b.size())
      w.size = ImageSize{be16(b, i + 7), be16(b, i + 5)};
    if (len < 2) return w;
    i += 2 + len;
  }
  return w;
}

std::optional<ImageSize> webp_size(Bytes b) {
  if (b.size() < 30) return std::nullopt;
  if (starts_with(b, "VP8X", 4, 12)) return ImageSize{le24(b, 24) + 1, le24(b, 27) + 1};
  if (starts_with(b, "VP8L", 4, 12)) {
    const std::uint32_t bits = le32(b, 21);
    return ImageSize{(bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1};
  }
  if (starts_with(b, "VP8 ", 4, 12)) return ImageSize{le16(b, 26) & 0x3FFF, le16(b, 28) & 0x3FFF};
  return std::nullopt;
}

std::optional<ImageSize> tiff_size(Bytes b) {
  const bool le = b[0] == 'I';
  auto u16 = [&](std::size_t i) { return le ? le16(b, i) : be16(b, i); };
  auto u32 = [&](std::size_t i) { return le ? le32(b, i) : be32(b, i); };
  if (b.size() < 8) return std::nullopt;
  const std::size_t ifd = u32(4);
  if (ifd + 2 > b.size()) return std::nullopt;
  const std::uint32_t count = u16(ifd);
  std::uint64_t w = 0, h = 0;
  for (std::size_t e = 0; e < count; ++e) {
    const std::size_t at = ifd + 2 + 12 * e;
    if (at + 12 > b.size()) return std::nullopt;
    const std::uint32_t tag = u16(at), type = u16(at + 2);
    const std::uint32_t value = type == 3 ? u16(at + 8) : u32(at + 8);  // SHORT or LONG
    // A repeated tag: libtiff keeps one of them; the larger is the safe reading.
    if (tag == 256) w = std::max<std::uint64_t>(w, value);
    if (tag == 257) h = std::max<std::uint64_t>(h, value);
  }
  if (w == 0 || h == 0) return std::nullopt;
  return ImageSize{w, h};
}

// P1-P6, numbers read as OpenCV's PxM decoder reads them: whitespace and '#' comments (up to
// '\n' or '\r') are skipped, any other byte before the digits is an error, and the digits end
// at any non-digit byte, which is consumed with them ("1\xEC1" is 1 and 1).
std::optional<ImageSize> pnm_size(Bytes b) {
  std::size_t i = 2;
  auto number = [&]() -> std::optional<std::uint64_t> {
    for (;;) {
      if (i >= b.size()) return std::nullopt;
      if (std::isdigit(b[i])) break;
      if (b[i] == '#') {
        while (i < b.size() && b[i] != '\n' && b[i] != '\r') ++i;
        ++i;  // the line end
      } else if (std::isspace(b[i])) {
        ++i;
      } else {
        return std::nullopt;  // OpenCV refuses the file here
      }
    }
    std::uint64_t v = 0;
    for (; i < b.size() && std::isdigit(b[i]); ++i)
      if (v < (1ULL << 40)) v = v * 10 + static_cast<std::uint64_t>(b[i] - '0');
    ++i;  // the byte that ended the number
    return v;
  };
  const auto w = number();
  const auto h = w ? number() : std::nullopt;
  if (!h) return std::nullopt;
  return ImageSize{*w, *h};
}

bool is_jpeg(Bytes b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

// A whole number as C's atoi reads it (spaces, optional sign, digits), saturating at 2^44;
// negative values give 0, which callers refuse as an empty image. nullopt without digits.
std::optional<std::uint64_t> read_number(Bytes b, std::size_t& i) {
  while (i < b.size() && std::isspace(b[i])) ++i;
  bool negative = false;
  if (i < b.size() && (b[i] == '+' || b[i] == '-')) negative = b[i++] == '-';
  if (i >= b.size() || !std::isdigit(b[i])) return std::nullopt;
  std::uint64_t v = 0;
  while (i < b.size() && std::isdigit(b[i])) {
    if (v < (1ULL << 44)) v = v * 10 + static_cast<std::uint64_t>(b[i] - '0');
    ++i;
  }
  return negative ? 0 : v;
}

// PFM, read as OpenCV 4.6 reads it: "PF" or "Pf" and a line break, then width, height and
// scale, each the bytes up to the next single whitespace byte (up to 2048 of them; two
// whitespace bytes in a row give an empty field) converted with atoi, so "30000x" is 30000.
std::optional<ImageSize> pfm_size(Bytes b) {
  if (b.size() < 3 || b[2] != '\n') return std::nullopt;  // OpenCV refuses these
  std::size_t i = 3;
  auto field = [&]() -> std::optional<long> {
    std::string token;
    for (std::size_t k = 0; k < 2048; ++k) {
      if (i >= b.size()) return std::nullopt;  // OpenCV fails at the end of the data
      const auto c = b[i++];
      if (std::isspace(c)) break;
      token += static_cast<char>(c);
    }
    return std::strtol(token.c_str(), nullptr, 10);  // what glibc's atoi does, before its cast to int
  };
  const auto w = field();
  const auto h = w ? field() : std::nullopt;
  if (!h) return std::nullopt;
  // OpenCV keeps the low 32 bits (atoi's int); a side that is not positive there is refused
  // by OpenCV, and by the caller as an empty image here.
  auto side = [](long v) -> std::uint64_t {
    const auto low = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
    return low > 0 ? static_cast<std::uint64_t>(low) : 0;
  };
  return ImageSize{side(*w), side(*h)};
}

// PAM (P7): header lines "WIDTH n", "HEIGHT n", ... up to ENDHDR, '#' comments allowed. The
// largest value given for a field is taken, so a repeated field cannot hide a larger one.
std::optional<ImageSize> pam_size(Bytes b) {
  std::optional<std::uint64_t> w, h;
  std::size_t i = 2;
  while (i < b.size()) {
    while (i < b.size() && std::isspace(b[i])) ++i;
    if (i >= b.size()) break;
    if (b[i] == '#') {  // a comment runs to the end of the line, '\n' or '\r' as in OpenCV
      while (i < b.size() && b[i] != '\n' && b[i] != '\r') ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < b.size() && !std::isspace(b[i])) ++i;
    std::string_view word(reinterpret_cast<const char*>(b.data() + start), i - start);
    word = word.substr(0, word.find('\0'));  // OpenCV compares it as a C string: "WIDTH\0x" is WIDTH
    if (word == "ENDHDR") break;
    if (word != "WIDTH" && word != "HEIGHT") continue;
    auto& field = word == "WIDTH" ? w : h;
    std::size_t j = i;
    const auto v = read_number(b, j);
    if (v) {
      field = std::max(field.value_or(0), *v);
      i = j;
    }
  }
  if (!w || !h) return std::nullopt;
  return ImageSize{*w, *h};
}

// Radiance HDR, read as OpenCV's RGBE_ReadHeader reads it, line by line with fgets into a
// 128-byte buffer (a longer line comes in pieces): the first line, then lines up to the first
// empty one, then "-Y height +X width", scanned with the same sscanf format. (Older versions
// also demand FORMAT= right before the empty line; where they succeed, this reads the same.)
std::optional<ImageSize> hdr_size(Bytes b) {
  std::size_t i = 0;
  char buf[128];
  auto next_line = [&]() {
    if (i >= b.size()) return false;
    std::size_t n = 0;
    while (i < b.size() && n < sizeof buf - 1) {
      const char c = static_cast<char>(b[i++]);
      buf[n++] = c;
      if (c == '\n') break;
    }
    buf[n] = '\0';
    return true;
  };
  if (!next_line()) return std::nullopt;
  do {
    if (!next_line()) return std::nullopt;
  } while (buf[0] != '\n');
  if (!next_line()) return std::nullopt;
  int height = 0, width = 0;
  if (std::sscanf(buf, "-Y %d +X %d", &height, &width) < 2) return std::nullopt;
  return ImageSize{width > 0 ? static_cast<std::uint64_t>(width) : 0, height > 0 ? static_cast<std::uint64_t>(height) : 0};
}

// JPEG 2000, a .jp2 file or a raw codestream: the image area of the codestream's SIZ marker
// segment (SOC FF4F, then SIZ FF51: Lsiz, Rsiz, Xsiz, Ysiz, XOsiz, YOsiz). The largest of all
// SIZ segments found is taken, so that a decoy one cannot stand for the real codestream.
std::optional<ImageSize> jpeg2000_size(Bytes b) {
  std::optional<ImageSize> size;
  for (std::size_t j = 0; j + 24 <= b.size(); ++j) {
    if (b[j] != 0xFF || b[j + 1] != 0x4F || b[j + 2] != 0xFF || b[j + 3] != 0x51) continue;
    const std::uint32_t x = be32(b, j + 8), y = be32(b, j + 12), x0 = be32(b, j + 16), y0 = be32(b, j + 20);
    const ImageSize here{x > x0 ? x - x0 : 0, y > y0 ? y - y0 : 0};
    if (!size) size = here;
    size->width = std::max(size->width, here.width);
    size->height = std::max(size->height, here.height);
  }
  return size;
}

}  // namespace

std::uint64_t pixel_count(const ImageSize& size) {
  std::uint64_t n = 0;
  return __builtin_mul_overflow(size.width, size.height, &n) ? UINT64_MAX : n;
}

std::optional<ImageSize> read_image_size(Bytes b) {
  if (starts_with(b, "\x89PNG\r\n\x1a\n", 8)) return png_size(b);
  if (is_jpeg(b)) return walk_jpeg(b).size;
  if ((starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) && b.size() >= 10)
    return ImageSize{le16(b, 6), le16(b, 8)};
  if (starts_with(b, "BM", 2) && b.size() >= 26) {
    const auto h = static_cast<std::int32_t>(le32(b, 22));  // negative: top-down rows
    return ImageSize{le32(b, 18), static_cast<std::uint64_t>(h < 0 ? -static_cast<std::int64_t>(h) : h)};
  }
  if (starts_with(b, "RIFF", 4) && starts_with(b, "WEBP", 4, 8)) return webp_size(b);
  if (starts_with(b, "II*\0", 4) || starts_with(b, "MM\0*", 4)) return tiff_size(b);
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && std::isspace(b[2])) return pnm_size(b);
  if (b.size() >= 3 && b[0] == 'P' && b[1] == '7' && std::isspace(b[2])) return pam_size(b);
  if (starts_with(b, "PF", 2) || starts_with(b, "Pf", 2)) return pfm_size(b);
  if (starts_with(b, "\x59\xA6\x6A\x95", 4)) return b.size() >= 12 ? std::optional(ImageSize{be32(b, 4), be32(b, 8)}) : std::nullopt;
  if (starts_with(b, "#?", 2)) return hdr_size(b);
  if (starts_with(b, "\x00\x00\x00\x0CjP  \r\n\x87\n", 12) || starts_with(b, "\xFF\x4F\xFF\x51", 4)) return jpeg2000_size(b);
  return std::nullopt;
}

namespace {

std::optional<std::string> jpeg_problem(Bytes b) {
  // Entropy-coded data stuffs every 0xFF as FF 00, so FF D9 after the first scan can only
  // be the real end-of-image marker. (Walking the segments skips an EXIF thumbnail's own.)
  const auto scan = walk_jpeg(b).scan;
  if (!scan) return "corrupt JPEG (no image data found)";
  for (std::size_t j = *scan + 2; j + 1 < b.size(); ++j)
    if (b[j] == 0xFF && b[j + 1] == 0xD9) return std::nullopt;
  return "JPEG data is truncated (no end-of-image marker)";
}

std::optional<std::string> png_problem(Bytes b) {
  // Chunks: 4-byte big-endian length, 4-byte type, data, 4-byte CRC; the last is IEND.
  std::size_t i = 8;
  while (i + 12 <= b.size()) {
    const std::uint64_t len = be32(b, i);
    if (starts_with(b, "IEND", 4, i + 4)) return std::nullopt;
    i += 12 + len;
  }
  return "PNG data is truncated (no IEND chunk)";
}

}  // namespace


std::optional<std::string> container_problem(Bytes b) {
  if (is_jpeg(b)) return jpeg_problem(b);
  if (starts_with(b, "\x89PNG\r\n\x1a\n", 8)) return png_problem(b);
  return std::nullopt;
}

}  // namespace vitattn::image
