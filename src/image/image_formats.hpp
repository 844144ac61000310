#pragma once
// The one table of image formats: which vitattn reads, which it knows but refuses, and the
// file extensions and signatures of each. The folder scan picks files by these extensions and
// the decoder names formats by these signatures, so the two always agree.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace vitattn::image {

struct ImageFormat {
  const char* name;                     // "JPEG", "OpenEXR", …
  std::vector<const char*> extensions;  // lower case, without the dot
  bool readable;                        // false: known, refused as "format not supported"
};

// The format a file name's extension (any case) belongs to, or nullptr.
const ImageFormat* format_by_extension(const std::filesystem::path& path);

// The format the first bytes of a file belong to, or nullptr when no signature matches.
const ImageFormat* format_by_signature(std::span<const std::uint8_t> bytes);

// Whether a folder scan takes a file with this name: a readable format's extension.
bool has_image_extension(const std::filesystem::path& path);

// "PNG, JPEG, …": the readable formats, for messages.
std::string readable_format_names();

}  // namespace vitattn::image
