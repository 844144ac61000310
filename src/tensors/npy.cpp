#include "tensors/npy.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::tensors {
namespace {

constexpr std::uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

std::string shape_tuple(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (i + 1 < shape.size() || shape.size() == 1 ? ", " : "");
  if (shape.size() == 1) s.pop_back();  // "(n,)"
  return s + ")";
}

// Value of `key` in the header dict, up to the next top-level comma or closing brace.
std::string_view dict_value(std::string_view dict, std::string_view key, const std::string& source) {
  const std::string quoted = fmt::format("'{}'", key);
  const auto at = dict.find(quoted);
  if (at == std::string_view::npos) throw Error(source + ": .npy header has no " + quoted);
  auto p = dict.find(':', at + quoted.size());
  if (p == std::string_view::npos) throw Error(source + ": .npy header is malformed near " + quoted);
  ++p;
  while (p < dict.size() && dict[p] == ' ') ++p;
  std::size_t end = p;
  if (end < dict.size() && dict[end] == '(') {
    end = dict.find(')', end);
    if (end == std::string_view::npos) throw Error(source + ": .npy header has an unclosed shape");
    ++end;
  } else {
    while (end < dict.size() && dict[end] != ',' && dict[end] != '}') ++end;
  }
  return dict.substr(p, end - p);
}

// Magic, version 1.0, a little-endian u16 header length, then a Python dict literal padded
// with spaces and ended by '\n' so the data start on a 64-byte boundary; then the data.
std::vector<std::uint8_t> encode_array(const char* descr, const void* data, std::size_t item_size,
                                       const std::vector<std::uint64_t>& shape) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  const std::size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  dict.append((64 - (preamble + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  const auto header_len = static_cast<std::uint16_t>(dict.size());
  std::size_t count = 1;
  for (auto n : shape) count *= static_cast<std::size_t>(n);
  const std::size_t data_bytes = count * item_size;
  std::vector<std::uint8_t> out;
  out.resize(preamble + dict.size() + data_bytes);  // not out(n): GCC 12 -O3 then sees a null data() (-Wnull-dereference)
  std::memcpy(out.data(), kMagic, 6);
  out[6] = 1;
  out[7] = 0;
  out[8] = static_cast<std::uint8_t>(header_len & 0xff);
  out[9] = static_cast<std::uint8_t>(header_len >> 8);
  std::memcpy(out.data() + preamble, dict.data(), dict.size());
  // An empty array has no data pointer, and memcpy from a null pointer is undefined even
  // for 0 bytes (found by the npy fuzzer).
  if (data_bytes > 0) std::memcpy(out.data() + preamble + dict.size(), data, data_bytes);
  return out;
}

}  // namespace

std::vector<std::uint8_t> encode_npy(const float* data, const std::vector<std::uint64_t>& shape) {
  return encode_array("<f4", data, sizeof(float), shape);
}

std::vector<std::uint8_t> encode_npy_bool(const std::uint8_t* data, const std::vector<std::uint64_t>& shape) {
  return encode_array("|b1", data, 1, shape);  // numpy's bool: one byte, 0 or 1
}

std::vector<std::uint8_t> encode_npy_int32(const std::int32_t* data, const std::vector<std::uint64_t>& shape) {
  return encode_array("<i4", data, sizeof(std::int32_t), shape);  // little-endian, as every target vitattn builds for
}

void write_npy_int32(const std::filesystem::path& path, const std::int32_t* data, const std::vector<std::uint64_t>& shape) {
  const auto bytes = encode_npy_int32(data, shape);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

std::vector<std::uint8_t> encode_npy(const Matrix& m) {
  // Matrix is row-major, which is C order.
  return encode_npy(m.data(), {static_cast<std::uint64_t>(m.rows()), static_cast<std::uint64_t>(m.cols())});
}

void write_npy(const std::filesystem::path& path, const float* data, const std::vector<std::uint64_t>& shape) {
  const auto bytes = encode_npy(data, shape);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

void write_npy_bool(const std::filesystem::path& path, const std::uint8_t* data, const std::vector<std::uint64_t>& shape) {
  const auto bytes = encode_npy_bool(data, shape);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

void write_npy(const std::filesystem::path& path, const Matrix& m) {
  const auto bytes = encode_npy(m);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

NpyArray parse_npy(const std::vector<std::uint8_t>& bytes, const std::string& source) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) throw Error(source + ": not a .npy file");
  const std::uint8_t major = bytes[6];
  std::size_t header_len = 0, preamble = 0;
  if (major == 1) {
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8);
    preamble = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(source + ": .npy file cut short in its header");
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8) | (std::size_t{bytes[10]} << 16) | (std::size_t{bytes[11]} << 24);
    preamble = 12;
  } else {
    throw Error(source + ": .npy version " + std::to_string(major) + " is not supported");
  }
  if (header_len > bytes.size() - preamble) throw Error(source + ": .npy file cut short in its header");
  const std::string_view dict(reinterpret_cast<const char*>(bytes.data() + preamble), header_len);

  const std::string_view descr = dict_value(dict, "descr", source);
  std::size_t item = 0;
  if (descr == "'<f4'") item = 4;
  else if (descr == "'<f8'") item = 8;
  else throw Error(source + ": .npy dtype " + files::printable(descr, true) + " is not supported (float32 or float64 only)");
  if (dict_value(dict, "fortran_order", source) != "False")
    throw Error(source + ": .npy array is in Fortran order; save it with numpy.ascontiguousarray");

  NpyArray a;
  std::string_view shape = dict_value(dict, "shape", source);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') throw Error(source + ": .npy shape is malformed");
  shape = shape.substr(1, shape.size() - 2);
  std::uint64_t count = 1;
  for (std::size_t p = 0; p < shape.size();) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p == shape.size()) break;
    std::uint64_t n = 0;
    std::size_t digits = 0;
    for (; p < shape.size() && shape[p] >= '0' && shape[p] <= '9' && digits < 12; ++p, ++digits)
      n = n * 10 + static_cast<std::uint64_t>(shape[p] - '0');
    if (digits == 0 || (p < shape.size() && shape[p] != ',' && shape[p] != ' '))
      throw Error(source + ": .npy shape (" + files::printable(shape, true) + ") is malformed");
    a.shape.push_back(n);
    if (n != 0 && count > (std::uint64_t{1} << 40) / n) throw Error(source + ": .npy shape is implausibly large");
    count *= n;
  }
  const std::size_t data_start = preamble + header_len;
  if (bytes.size() - data_start != count * item)
    throw Error(source + ": .npy data is " + std::to_string(bytes.size() - data_start) + " bytes, shape " +
                shape_tuple(a.shape) + " needs " + std::to_string(count * item));
  a.values.resize(static_cast<std::size_t>(count));
  const std::uint8_t* data = bytes.data() + data_start;
  if (item == 4) {
    if (count) std::memcpy(a.values.data(), data, static_cast<std::size_t>(count) * 4);
  } else {
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      a.values[i] = static_cast<float>(v);
    }
  }
  return a;
}

NpyArray read_npy(const std::filesystem::path& path, std::uint64_t max_bytes) {
  return parse_npy(files::read_file(path, max_bytes), files::display(path));
}

}  // namespace vitattn::tensors
