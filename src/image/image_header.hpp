#pragma once
// Image dimensions read from the file's header alone, so that a huge image can be refused
// before a decoder allocates it. OpenCV 4.6 has no header-only query (cv::ImageCollection
// came in 4.7), hence these few parsers.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace vitattn::image {

struct ImageSize {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
};

// width · height, saturating at 2^64 − 1 (PNM headers can give sides of up to 2^44).
std::uint64_t pixel_count(const ImageSize& size);

// PNG, JPEG, GIF, BMP, WebP, TIFF, PNM (P1-P6), and the other formats OpenCV 4.6 decodes from
// memory: PAM (P7), PFM, Sun raster, Radiance HDR and JPEG 2000 (.jp2 and raw codestream).
// nullopt for other formats or unparseable headers. Where a header could be read more than one
// way, the larger size is given, so that a size cap applied to it stays on the safe side.
std::optional<ImageSize> read_image_size(std::span<const std::uint8_t> bytes);

// What is structurally wrong with a JPEG or PNG file, checked before decoding, or
// nullopt when nothing is (or the format is another). A JPEG cut short would otherwise be
// decoded with its missing rows filled grey, and libpng would print its own complaint.
std::optional<std::string> container_problem(std::span<const std::uint8_t> bytes);

}  // namespace vitattn::image
