// The safetensors reader: a round trip, half-precision decoding, and every rejection path.
#include "tensors/safetensors.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "test_util.hpp"

namespace vitattn::tensors {
namespace {

std::vector<std::uint8_t> file_with(const std::string& header, std::size_t data_bytes) {
  std::vector<std::uint8_t> out(8 + header.size() + data_bytes, 0);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(header.size() >> (8 * i));  // u64 LE
  std::copy(header.begin(), header.end(), out.begin() + 8);
  return out;
}

// Parses and returns the error message ("" when it parsed).
std::string error_of(std::vector<std::uint8_t> bytes) {
  try {
    TensorFile::parse(std::move(bytes), "m.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripKeepsValuesShapesAndMetadata) {
  const std::vector<NamedTensor> tensors = {{"a", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b.c", {1}, {-0.5f}}, {"empty", {0, 4}, {}}};
  auto bytes = encode_safetensors(tensors, {{"mean", "0.5,0.5,0.5"}});
  std::uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "data section must start 8-byte aligned";
  const TensorFile st = TensorFile::parse(bytes, "x");
  EXPECT_EQ(st.metadata().at("mean"), "0.5,0.5,0.5");
  const TensorInfo* a = st.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(st.floats("a", {2, 3}), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(st.floats("b.c"), (std::vector<float>{-0.5f}));
  EXPECT_TRUE(st.floats("empty").empty());
}

TEST(Safetensors, WritesAndLoadsAFile) {
  test::TempDir dir;
  write_safetensors(dir / "m.safetensors", {{"w", {2}, {3.5f, -1}}}, {});
  EXPECT_EQ(TensorFile::load(dir / "m.safetensors").floats("w"), (std::vector<float>{3.5f, -1}));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "m.safetensors") << "temporary file left behind";
}

TEST(Safetensors, DecodesF16AndBF16) {
  // F16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF, 2^-24 = 0x0001 (subnormal).
  // BF16: 1.0 = 0x3F80, -2.0 = 0xC000, 3.140625 = 0x4049.
  const std::uint16_t f16[4] = {0x3C00, 0xC000, 0x7BFF, 0x0001};
  const std::uint16_t bf16[3] = {0x3F80, 0xC000, 0x4049};
  auto bytes = file_with(
      R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]}})",
      14);
  const std::size_t data = bytes.size() - 14;
  std::memcpy(bytes.data() + data, f16, 8);
  std::memcpy(bytes.data() + data + 8, bf16, 6);
  const TensorFile st = TensorFile::parse(bytes, "x");
  EXPECT_EQ(st.floats("h"), (std::vector<float>{1.0f, -2.0f, 65504.0f, 0x1p-24f}));
  EXPECT_EQ(st.floats("b"), (std::vector<float>{1.0f, -2.0f, 3.140625f}));
}

TEST(Safetensors, AcceptsNonFloatTensorsButNotAsWeights) {
  // HF checkpoints carry integer buffers such as position_ids: they load, but are no weights.
  const auto bytes = file_with(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16);
  const TensorFile st = TensorFile::parse(bytes, "m.safetensors");
  try {
    st.floats("ids");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ids has dtype I64"), std::string::npos) << e.what();
  }
}

struct Malformed {
  const char* what;
  std::vector<std::uint8_t> bytes;
  const char* expected;  // a substring of the message
};

std::vector<Malformed> malformed_cases() {
  std::vector<Malformed> c;
  auto huge = file_with("", 0);
  const std::uint64_t too_big = kMaxHeaderBytes + 1;
  std::memcpy(huge.data(), &too_big, 8);
  c.push_back({"header over 100 MB", huge, "over the 100000000-byte limit"});
  auto longer = file_with("{}", 0);
  const std::uint64_t claims = 500;
  std::memcpy(longer.data(), &claims, 8);
  c.push_back({"header longer than file", longer, "header is 500 bytes but the file has only 2"});
  c.push_back({"too short", {1, 2, 3}, "too short"});
  c.push_back({"invalid JSON", file_with("{\"a\": [1, 2", 0), "not valid JSON"});
  c.push_back({"not an object", file_with("[1, 2]", 0), "not a JSON object"});
  c.push_back({"unknown dtype", file_with(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
               "w: unknown dtype F128"});
  c.push_back({"no shape", file_with(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4), "w: no shape"});
  c.push_back({"negative dim", file_with(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
               "not a whole number"});
  c.push_back({"bad offsets", file_with(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
               "data_offsets is not [begin, end]"});
  c.push_back({"size mismatch", file_with(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20),
               "w: F32 [2, 3] needs 24 bytes, data_offsets give 20"});
  c.push_back({"overflowing shape",
               file_with(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
               "is too large"});
  c.push_back({"past the end", file_with(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
               "past the 8 bytes of data"});
  c.push_back({"reversed offsets", file_with(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8),
               "end before they begin"});
  c.push_back({"overlap",
               file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
               "b: data overlaps a"});
  c.push_back({"gap",
               file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12),
               "b: gap of 4 bytes"});
  c.push_back({"gap at start", file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "gap of 4 bytes"});
  c.push_back({"file longer than header says", file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 9),
               "5 bytes of data after the last tensor"});
  c.push_back({"metadata not strings", file_with(R"({"__metadata__":{"mean":1}})", 0), "__metadata__.mean is not a string"});
  return c;
}

TEST(Safetensors, RejectsEveryMalformedFileWithASpecificMessage) {
  for (auto& m : malformed_cases()) {
    const std::string msg = error_of(m.bytes);
    EXPECT_NE(msg.find(m.expected), std::string::npos) << m.what << ": got \"" << msg << "\"";
    EXPECT_EQ(msg.rfind("m.safetensors: ", 0), 0u) << m.what << ": message must name the file: " << msg;
  }
}

// The same files through the mapping (TensorFile::load) give the same messages, naming the path.
TEST(Safetensors, AMappedFileIsRefusedLikeBytesInMemory) {
  test::TempDir dir;
  for (auto& m : malformed_cases()) {
    const auto path = dir / "m.safetensors";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(m.bytes.data()),
                                                                  static_cast<std::streamsize>(m.bytes.size()));
    std::string msg;
    try {
      TensorFile::load(path);
    } catch (const Error& e) {
      msg = e.what();
    }
    const std::string in_memory = error_of(m.bytes);
    ASSERT_EQ(msg.rfind(path.string() + ": ", 0), 0u) << m.what << ": " << msg;
    EXPECT_EQ(msg.substr(path.string().size()), in_memory.substr(std::string("m.safetensors").size())) << m.what;
  }
}

// Values converted straight from the mapping into the caller's buffer, every dtype, twice
// (the pages given back after the first read come back from the file), and the same as floats().
TEST(Safetensors, ReadsFromTheMappingIntoTheCallersBuffer) {
  test::TempDir dir;
  std::vector<NamedTensor> tensors;
  for (int t = 0; t < 3; ++t) {
    NamedTensor nt{"t" + std::to_string(t), {300, 1000 + static_cast<std::uint64_t>(t)}, {}};
    nt.values.resize(300 * (1000 + static_cast<std::size_t>(t)));
    for (std::size_t i = 0; i < nt.values.size(); ++i) nt.values[i] = static_cast<float>(i % 977) * 0.25f - 100.0f * static_cast<float>(t);
    tensors.push_back(std::move(nt));
  }
  write_safetensors(dir / "m.safetensors", tensors, {});
  const TensorFile st = TensorFile::load(dir / "m.safetensors");
  for (int round = 0; round < 2; ++round)
    for (const auto& t : tensors) {
      std::vector<float> out(t.values.size(), std::nanf(""));
      st.read_floats(t.name, t.shape, out.data());
      EXPECT_EQ(out, t.values) << t.name << ", round " << round;
      EXPECT_EQ(st.floats(t.name), t.values) << t.name;
    }
}

// Another program truncates the file while it is mapped: reading the pages that are gone
// raises SIGBUS, which must come back as an Error naming the file, not end the process.
TEST(Safetensors, AFileThatShrinksWhileMappedIsAnErrorNotACrash) {
  test::TempDir dir;
  NamedTensor big{"w", {1024, 1024}, std::vector<float>(1024 * 1024, 1.5f)};
  NamedTensor small{"b", {4}, {1, 2, 3, 4}};
  const auto path = dir / "m.safetensors";
  write_safetensors(path, {small, big}, {});
  const TensorFile st = TensorFile::load(path);
  std::filesystem::resize_file(path, 4096);  // "w"'s data is now past the end
  std::vector<float> out(1024 * 1024);
  try {
    st.read_floats("w", {1024, 1024}, out.data());
    FAIL() << "read past the end of a truncated file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": the file shrank"), std::string::npos) << e.what();
  }
  std::vector<float> b(4);
  st.read_floats("b", {4}, b.data());  // still inside the file: read as before
  EXPECT_EQ(b, (std::vector<float>{1, 2, 3, 4}));
}

TEST(Safetensors, MessagesStayOnOneLineWhateverTheFileHolds) {
  // Names and dtypes come from the file: a newline in them must not split the error line, and
  // the JSON parser's quote of invalid UTF-8 must not reach the terminal raw.
  struct Case {
    std::vector<std::uint8_t> bytes;
    const char* expected;
  };
  const Case cases[] = {
      {file_with(R"({"a\nb":[1]})", 0), "m.safetensors: a\\x0Ab: entry is not an object"},
      {file_with(R"({"w":{"dtype":"F\n32","shape":[1],"data_offsets":[0,4]}})", 4), "w: unknown dtype F\\x0A32"},
      {file_with(R"({"__metadata__":{"k\r":1}})", 0), "__metadata__.k\\x0D is not a string"},
      {file_with("{\"\xff\xfe\": 1}", 0), "header is not valid JSON"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(c.bytes);
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    for (const char ch : msg) {
      EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << "control character in: " << msg;
      EXPECT_LT(static_cast<unsigned char>(ch), 0x80) << "non-ASCII byte in: " << msg;
    }
  }
  const TensorFile st = TensorFile::parse(file_with(R"({"x\ny":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}})", 1), "m");
  try {
    st.floats("x\ny");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "m: x\\x0Ay has dtype I8; weights must be F32, F16, BF16 or F64");
  }
}

TEST(Safetensors, ShapeCheckNamesExpectedAndActual) {
  const auto bytes = encode_safetensors({{"attn.q.weight", {64, 384}, std::vector<float>(64 * 384)}}, {});
  const TensorFile st = TensorFile::parse(bytes, "model.safetensors");
  try {
    st.floats("attn.q.weight", {64, 768});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "model.safetensors: attn.q.weight is [64, 384], expected [64, 768]");
  }
  EXPECT_THROW(st.floats("attn.k.weight", {64, 768}), Error);
}

TEST(Safetensors, MissingFileIsAnErrorNamingIt) {
  try {
    TensorFile::load("/nonexistent/m.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/m.safetensors: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace vitattn::tensors
