#pragma once
// safetensors: an 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
// then the raw little-endian tensor data, offsets counted from its start.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vitattn::files {
class MappedFile;
}  // namespace vitattn::files

namespace vitattn::tensors {

inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);

struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data section
  std::uint64_t end = 0;
  std::uint64_t element_count() const;  // product of shape (checked when read)
};

// The tensors of one checkpoint file, whatever its format: a safetensors file is read here
// (mapped), a PyTorch file is gathered into one by pth_reader.hpp (from_memory), and the
// model loaders take either alike.
class TensorFile {
 public:
  // Reads and checks the whole file: header size and JSON, dtypes, shapes against byte
  // counts (overflow-checked), offsets that must tile the data section exactly — no gap,
  // no overlap, nothing past the end, no bytes left over. Throws Error "PATH: ...".
  // The file is mapped (mapped_file.hpp), not read, and its pages mapped in ahead: the
  // tensors are read in place (floats_in_place) or converted straight from the mapping.
  static TensorFile load(const std::filesystem::path& path);
  static TensorFile parse(std::vector<std::uint8_t> bytes, const std::string& source);
  // A file already mapped; the TensorFile shares the mapping.
  static TensorFile map(std::shared_ptr<const files::MappedFile> file, const std::string& source);
  // Tensors already in memory (gathered from a PyTorch file, pth_reader.hpp): each one's bytes
  // at [begin, end) of `data`, checked against its dtype and shape.
  static TensorFile from_memory(std::vector<std::uint8_t> data, std::map<std::string, TensorInfo> tensors,
                                 std::map<std::string, std::string> metadata, const std::string& source);

  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;

  // The tensor's values as float32 (F32, F16, BF16 and F64 accepted), shape checked against
  // `expected` first. Throws "PATH: NAME is [a, b], expected [c, d]" and the like.
  std::vector<float> floats(const std::string& name, const std::vector<std::uint64_t>& expected) const;
  std::vector<float> floats(const std::string& name) const;
  // The same into `out` (element_count() floats, e.g. an uninitialised Eigen matrix): no
  // buffer in between. Throws like floats(), and "PATH: the file shrank …" when a mapped
  // file was truncated under us. The tensor's pages of a mapped file are given back after.
  void read_floats(const std::string& name, const std::vector<std::uint64_t>& expected, float* out) const;

  // The tensor's values where they are, when they can be read as float32 as they are: dtype
  // F32 (little-endian, as this machine: checked at compile time) and its first byte aligned
  // for a float. `owner` keeps them alive (the mapping, or the bytes in memory) after this
  // TensorFile is gone; nothing writes them. nullopt when they need converting (F16, BF16,
  // F64) or are misaligned (safetensors only promises offsets that are multiples of the
  // dtype's size, from a data section that starts after a header of any length): read_floats
  // then. Throws like floats() for a missing tensor, another shape or a dtype that is no float.
  // The values are not read here: a file cut short under us shows when they are.
  struct InPlace {
    const float* data = nullptr;
    std::shared_ptr<const void> owner;
  };
  std::optional<InPlace> floats_in_place(const std::string& name, const std::vector<std::uint64_t>& expected) const;

  // The file's mapping, or null when its bytes are in memory: for asking lost() later.
  const std::shared_ptr<const files::MappedFile>& mapping() const { return map_; }

 private:
  static TensorFile parse_header(std::span<const std::uint8_t> head, std::uint64_t file_size, const std::string& source);
  const std::uint8_t* data() const;  // the file's first byte, in bytes_ or the mapping
  // The tensor `name` if it has shape `expected` and a float dtype; else throws.
  const TensorInfo& float_tensor(const std::string& name, const std::vector<std::uint64_t>& expected) const;

  std::string source_;
  std::shared_ptr<const std::vector<std::uint8_t>> bytes_;  // the file in memory, or null when it is mapped
  std::shared_ptr<const files::MappedFile> map_;    // the file mapped, or null
  std::uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorInfo> tensors_;
};

struct NamedTensor {
  std::string name;
  std::vector<std::uint64_t> shape;
  std::vector<float> values;  // written as F32
};

// Serialises F32 tensors in the order given, header padded with spaces to 8 bytes.
std::vector<std::uint8_t> encode_safetensors(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata);
void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

std::string shape_string(const std::vector<std::uint64_t>& shape);  // "[64, 768]"

}  // namespace vitattn::tensors
