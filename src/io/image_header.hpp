#pragma once
// Image dimensions read from the file's header alone, so that a huge image can be refused
// before a decoder allocates it. OpenCV 4.6 has no header-only query (cv::ImageCollection
// came in 4.7), hence these few parsers.
#include <cstdint>
#include <optional>
#include <span>

namespace vitattn::io {

struct ImageSize {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
};

// PNG, JPEG, GIF, BMP, WebP, TIFF and PNM; nullopt for other formats or unparseable headers.
std::optional<ImageSize> read_image_size(std::span<const std::uint8_t> bytes);

bool is_jpeg(std::span<const std::uint8_t> bytes);

// A JPEG whose compressed data has no end-of-image marker was cut short; libjpeg would
// quietly fill the missing rows with grey.
bool jpeg_is_truncated(std::span<const std::uint8_t> bytes);

}  // namespace vitattn::io
