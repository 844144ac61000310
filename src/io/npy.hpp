#pragma once
// NumPy's .npy format, version 1.0, float32 C order: what numpy.load reads back.
#include <filesystem>
#include <vector>

#include "core/tensor.hpp"

namespace vitattn::io {

std::vector<std::uint8_t> encode_npy(const Matrix& m);
void write_npy(const std::filesystem::path& path, const Matrix& m);  // all-or-nothing

}  // namespace vitattn::io
