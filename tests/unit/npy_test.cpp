// The .npy writer: the exact header numpy expects and the data in C order.
#include "tensors/npy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace vitattn::tensors {
namespace {

TEST(Npy, HeaderIsVersion1AlignedTo64AndDataIsRowMajor) {
  Matrix m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  const auto bytes = encode_npy(m);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8), 0);
  const std::size_t header_len = bytes[8] | static_cast<std::size_t>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(bytes.size(), 10 + header_len + 6 * sizeof(float));
  float data[6];
  std::memcpy(data, bytes.data() + 10 + header_len, sizeof data);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(data[i], static_cast<float>(i + 1));
}

TEST(Npy, EmptyMatrixIsAHeaderOnly) {
  // Found by the npy fuzzer: an empty matrix made encode_npy memcpy from a null pointer.
  const auto bytes = encode_npy(Matrix(0, 5));
  const std::size_t header_len = bytes[8] | static_cast<std::size_t>(bytes[9]) << 8;
  ASSERT_EQ(bytes.size(), 10 + header_len);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", 0), 0u) << header;
}

TEST(Npy, BoolArrayIsOneByteEachWithNumpysBoolDescr) {
  const std::uint8_t cells[6] = {1, 0, 0, 1, 1, 0};
  const auto bytes = encode_npy_bool(cells, {1, 2, 3});
  const std::size_t header_len = bytes[8] | static_cast<std::size_t>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '|b1', 'fortran_order': False, 'shape': (1, 2, 3), }", 0), 0u) << header;
  ASSERT_EQ(bytes.size(), 10 + header_len + 6);
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + header_len, cells, 6), 0);
}

TEST(Npy, Int32ArrayIsLittleEndianI4) {
  const std::int32_t ids[4] = {49406, 320, 49407, 0};
  const auto bytes = encode_npy_int32(ids, {2, 2});
  const std::size_t header_len = bytes[8] | static_cast<std::size_t>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", 0), 0u) << header;
  ASSERT_EQ(bytes.size(), 10 + header_len + 4 * sizeof(std::int32_t));
  EXPECT_EQ(bytes[10 + header_len], 49406 & 0xff);
  EXPECT_EQ(bytes[10 + header_len + 1], 49406 >> 8);
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + header_len, ids, sizeof ids), 0);
}

}  // namespace
}  // namespace vitattn::tensors
