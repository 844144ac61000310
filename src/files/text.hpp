#pragma once
// Small text helpers that several layers need, written once: an extension is compared in
// lower case ("photo.JPG" is a JPEG), and so are choices typed on a command line; a count
// takes its noun's number ("1 patch", "2 patches").
// ASCII only, on purpose: file extensions and option names are ASCII, and std::tolower's
// answer for other bytes depends on the locale.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace vitattn::files {

// `text` with A–Z made a–z; every other byte as it is.
std::string lower_case(std::string_view text);

// The extension of `path` in lower case, dot included: ".jpg" for "a/B.JPG", "" for "README".
std::string lower_extension(const std::filesystem::path& path);

// "1 patch", "14 patches", "0 images": n and the noun in its number.
std::string counted(std::size_t n, std::string_view one, std::string_view many);

}  // namespace vitattn::files
