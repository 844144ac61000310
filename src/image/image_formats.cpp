#include "image/image_formats.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include "files/text.hpp"

namespace vitattn::image {
namespace {

using Bytes = std::span<const std::uint8_t>;

bool at(Bytes b, std::size_t offset, const char* magic, std::size_t n) {
  return b.size() >= offset + n && std::memcmp(b.data() + offset, magic, n) == 0;
}

bool any_at(Bytes b, std::size_t offset, std::initializer_list<const char*> magics, std::size_t n) {
  return std::any_of(magics.begin(), magics.end(), [&](const char* m) { return at(b, offset, m, n); });
}

struct Entry {
  ImageFormat format;
  bool (*matches)(Bytes);
};

// Readable: what OpenCV 4.6 decodes from memory and image_header.cpp can size before decoding
// (so --max-pixels holds). Refused: formats OpenCV also opens (EXR, DICOM and NITF through GDCM
// and GDAL, BigTIFF) but whose size goes unchecked, and common photo formats it cannot read.
const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      {{"JPEG", {"jpg", "jpeg", "jpe", "jfif"}, true}, [](Bytes b) { return at(b, 0, "\xFF\xD8\xFF", 3); }},
      {{"PNG", {"png"}, true}, [](Bytes b) { return at(b, 0, "\x89PNG\r\n\x1a\n", 8); }},
      {{"BMP", {"bmp", "dib"}, true}, [](Bytes b) { return at(b, 0, "BM", 2); }},
      {{"WebP", {"webp"}, true}, [](Bytes b) { return at(b, 0, "RIFF", 4) && at(b, 8, "WEBP", 4); }},
      {{"TIFF", {"tif", "tiff"}, true}, [](Bytes b) { return any_at(b, 0, {"II*\0", "MM\0*"}, 4); }},
      {{"PNM", {"pbm", "pgm", "ppm", "pnm", "pxm"}, true},
       [](Bytes b) { return b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && std::isspace(b[2]); }},
      {{"PAM", {"pam"}, true}, [](Bytes b) { return b.size() >= 3 && b[0] == 'P' && b[1] == '7' && std::isspace(b[2]); }},
      {{"PFM", {"pfm"}, true}, [](Bytes b) { return any_at(b, 0, {"PF", "Pf"}, 2); }},
      {{"Sun raster", {"sr", "ras"}, true}, [](Bytes b) { return at(b, 0, "\x59\xA6\x6A\x95", 4); }},
      {{"Radiance HDR", {"hdr", "pic"}, true}, [](Bytes b) { return at(b, 0, "#?", 2); }},
      {{"JPEG 2000", {"jp2", "j2k", "j2c", "jpc"}, true},
       [](Bytes b) { return at(b, 0, "\x00\x00\x00\x0CjP  \r\n\x87\n", 12) || at(b, 0, "\xFF\x4F\xFF\x51", 4); }},
      {{"GIF", {"gif"}, false}, [](Bytes b) { return any_at(b, 0, {"GIF87a", "GIF89a"}, 6); }},
      {{"OpenEXR", {"exr"}, false}, [](Bytes b) { return at(b, 0, "\x76\x2F\x31\x01", 4); }},
      {{"BigTIFF", {}, false}, [](Bytes b) { return any_at(b, 0, {"II+\0", "MM\0+"}, 4); }},
      {{"DICOM", {"dcm", "dicom"}, false}, [](Bytes b) { return at(b, 128, "DICM", 4); }},
      {{"NITF", {"ntf", "nitf", "nsf"}, false}, [](Bytes b) { return any_at(b, 0, {"NITF", "NSIF"}, 4); }},
      {{"HEIF", {"heic", "heif"}, false},
       [](Bytes b) { return at(b, 4, "ftyp", 4) && any_at(b, 8, {"heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"}, 4); }},
      {{"AVIF", {"avif"}, false}, [](Bytes b) { return at(b, 4, "ftyp", 4) && any_at(b, 8, {"avif", "avis"}, 4); }},
      {{"JPEG XL", {"jxl"}, false},
       [](Bytes b) { return at(b, 0, "\xFF\x0A", 2) || at(b, 0, "\x00\x00\x00\x0CJXL \r\n\x87\n", 12); }},
      {{"Photoshop", {"psd"}, false}, [](Bytes b) { return at(b, 0, "8BPS", 4); }},
  };
  return entries;
}

}  // namespace

const ImageFormat* format_by_extension(const std::filesystem::path& path) {
  std::string ext = files::lower_extension(path);
  if (ext.size() < 2) return nullptr;
  ext.erase(0, 1);
  for (const auto& e : table())
    for (const char* x : e.format.extensions)
      if (ext == x) return &e.format;
  return nullptr;
}

const ImageFormat* format_by_signature(std::span<const std::uint8_t> bytes) {
  for (const auto& e : table())
    if (e.matches(bytes)) return &e.format;
  return nullptr;
}

std::string readable_format_names() {
  std::string names;
  for (const auto& e : table())
    if (e.format.readable) names += (names.empty() ? "" : ", ") + std::string(e.format.name);
  return names;
}

bool has_image_extension(const std::filesystem::path& path) {
  const ImageFormat* format = format_by_extension(path);
  return format && format->readable;
}

}  // namespace vitattn::image
