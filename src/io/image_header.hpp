#pragma once
// Image dimensions read from the file's header alone, so that a huge image can be refused
// before a decoder allocates it. OpenCV 4.6 has no header-only query (cv::ImageCollection
// came in 4.7), hence these few parsers.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace vitattn::io {

struct ImageSize {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
};

// PNG, JPEG, GIF, BMP, WebP, TIFF and PNM; nullopt for other formats or unparseable headers.
std::optional<ImageSize> read_image_size(std::span<const std::uint8_t> bytes);

// What is structurally wrong with a JPEG or PNG file, checked before decoding, or
// nullopt when nothing is (or the format is another). A JPEG cut short would otherwise be
// decoded with its missing rows filled grey, and libpng would print its own complaint.
std::optional<std::string> container_problem(std::span<const std::uint8_t> bytes);

}  // namespace vitattn::io
