#include "npy.hpp"

#include <cstring>
#include <string>

#include "file_io.hpp"

namespace vitattn::io {

std::vector<std::uint8_t> encode_npy(const Matrix& m) {
  // Magic, version 1.0, a little-endian u16 header length, then a Python dict literal
  // padded with spaces and ended by '\n' so the data start on a 64-byte boundary.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(m.rows()) + ", " +
                     std::to_string(m.cols()) + "), }";
  const std::size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  dict.append((64 - (preamble + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  const auto header_len = static_cast<std::uint16_t>(dict.size());
  const std::size_t data_bytes = static_cast<std::size_t>(m.size()) * sizeof(float);
  std::vector<std::uint8_t> out(preamble + dict.size() + data_bytes);
  const std::uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::memcpy(out.data(), magic, 8);
  out[8] = static_cast<std::uint8_t>(header_len & 0xff);
  out[9] = static_cast<std::uint8_t>(header_len >> 8);
  std::memcpy(out.data() + preamble, dict.data(), dict.size());
  // Matrix is row-major = C order. An empty matrix has no data pointer, and memcpy from a null
  // pointer is undefined even for 0 bytes (found by the npy fuzzer).
  if (data_bytes > 0) std::memcpy(out.data() + preamble + dict.size(), m.data(), data_bytes);
  return out;
}

void write_npy(const std::filesystem::path& path, const Matrix& m) {
  const auto bytes = encode_npy(m);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::io
