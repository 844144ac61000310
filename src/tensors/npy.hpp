#pragma once
// NumPy's .npy format: float32, int32 and bool C-order arrays written as version 1.0 (what numpy.load
// reads back); float32/float64 C-order arrays read (versions 1.0–3.0), e.g. preprocessed inputs.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace vitattn::tensors {

struct NpyArray {
  std::vector<std::uint64_t> shape;
  std::vector<float> values;  // C order
};

std::vector<std::uint8_t> encode_npy(const float* data, const std::vector<std::uint64_t>& shape);
std::vector<std::uint8_t> encode_npy(const Matrix& m);
void write_npy(const std::filesystem::path& path, const float* data, const std::vector<std::uint64_t>& shape);
void write_npy(const std::filesystem::path& path, const Matrix& m);  // all-or-nothing
// A bool array ('|b1'): one byte per element, 0 or 1. All-or-nothing, as write_npy.
std::vector<std::uint8_t> encode_npy_bool(const std::uint8_t* data, const std::vector<std::uint64_t>& shape);
void write_npy_bool(const std::filesystem::path& path, const std::uint8_t* data, const std::vector<std::uint64_t>& shape);
// An int32 array ('<i4'), e.g. token ids. All-or-nothing, as write_npy.
std::vector<std::uint8_t> encode_npy_int32(const std::int32_t* data, const std::vector<std::uint64_t>& shape);
void write_npy_int32(const std::filesystem::path& path, const std::int32_t* data, const std::vector<std::uint64_t>& shape);

// Throws Error "SOURCE: …" for anything but a little-endian float32/float64 C-order array
// whose data size matches its shape exactly.
NpyArray parse_npy(const std::vector<std::uint8_t>& bytes, const std::string& source);
NpyArray read_npy(const std::filesystem::path& path, std::uint64_t max_bytes = std::uint64_t{1} << 32);

}  // namespace vitattn::tensors
