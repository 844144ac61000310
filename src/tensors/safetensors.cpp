#include "tensors/safetensors.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/file_kind.hpp"
#include "files/fresh_memory.hpp"
#include "files/mapped_file.hpp"
#include "tensors/wrapper_prefixes.hpp"

namespace vitattn::tensors {
namespace {

static_assert(std::endian::native == std::endian::little, "vitattn reads little-endian data in place");

struct DTypeEntry {
  const char* name;
  DType dtype;
  std::size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {"F64", DType::F64, 8},   {"F32", DType::F32, 4},     {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2}, {"I64", DType::I64, 8},     {"I32", DType::I32, 4},
    {"I16", DType::I16, 2},   {"I8", DType::I8, 1},       {"U64", DType::U64, 8},
    {"U32", DType::U32, 4},   {"U16", DType::U16, 2},     {"U8", DType::U8, 1},
    {"BOOL", DType::BOOL, 1}, {"F8_E4M3", DType::F8_E4M3, 1}, {"F8_E5M2", DType::F8_E5M2, 1},
};

std::optional<DType> parse_dtype(const std::string& s) {
  for (const auto& e : kDTypes)
    if (s == e.name) return e.dtype;
  return std::nullopt;
}

// a·b, or nullopt when it would not fit in 64 bits.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The 8-byte little-endian length that starts the file; `head` holds at least 8 bytes.
std::uint64_t header_length(std::span<const std::uint8_t> head) {
  std::uint64_t n = 0;
  std::memcpy(&n, head.data(), 8);
  return n;
}

}  // namespace

std::size_t dtype_size(DType t) {
  for (const auto& e : kDTypes)
    if (e.dtype == t) return e.size;
  return 0;
}

const char* dtype_name(DType t) {
  for (const auto& e : kDTypes)
    if (e.dtype == t) return e.name;
  return "?";
}

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::uint64_t TensorInfo::element_count() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

TensorFile TensorFile::load(const std::filesystem::path& path) {
  return map(std::make_shared<const files::MappedFile>(path), files::display(path));
}

TensorFile TensorFile::map(std::shared_ptr<const files::MappedFile> file, const std::string& source) {
  // The header is copied out of the mapping (so that a truncation is caught here, once) and
  // parsed; the data stays in the mapping.
  auto shrank = [&] { return Error(source + ": the file shrank while it was being read (another program truncated it?)"); };
  auto head = file->copy(0, 4096);
  if (!head) throw shrank();
  if (head->size() >= 8) {
    const std::uint64_t header_len = header_length(*head);
    if (header_len <= kMaxHeaderBytes && header_len <= file->size() - 8 && 8 + header_len > head->size()) {
      head = file->copy(0, static_cast<std::size_t>(8 + header_len));
      if (!head) throw shrank();
    }
  }
  TensorFile st = parse_header(*head, file->size(), source);
  file->populate();  // every tensor is about to be read (checked, converted or both)
  st.map_ = std::move(file);
  return st;
}

TensorFile TensorFile::parse(std::vector<std::uint8_t> bytes, const std::string& source) {
  TensorFile st = parse_header(bytes, bytes.size(), source);
  st.bytes_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  return st;
}

const std::uint8_t* TensorFile::data() const { return map_ ? map_->data() : bytes_->data(); }

// `head`: the file's first bytes, all of the header when the file holds it (8 + its length).
namespace {

// Every message of the header's checks starts with the file's name.
struct HeaderError {
  const std::string& source;
  Error operator()(const std::string& what) const { return Error(source + ": " + what); }
};

// The header's length checked against the file, then its JSON parsed; `head` holds at least
// the first 8 + length bytes when the length fits.
nlohmann::json read_header_json(std::span<const std::uint8_t> head, std::uint64_t file_size, const HeaderError& fail) {
  if (file_size < 8) throw fail("too short for a safetensors file (" + std::to_string(file_size) + " bytes)");
  const std::uint64_t header_len = header_length(head);
  // Not even the start of one (a photo, a .pth): say what it is, not what its first 8 bytes
  // would mean as a header length.
  const bool header_fits = header_len <= kMaxHeaderBytes && header_len <= file_size - 8;
  if (file_size > 8 && head[8] != '{' && (!header_fits || !files::describe_kind(head, file_size).empty())) {
    const std::string kind = files::describe_kind(head, file_size);
    throw fail("not a safetensors file" + (kind.empty() ? std::string() : " (it is " + kind + ")"));
  }
  if (header_len > kMaxHeaderBytes)
    throw fail("header is " + std::to_string(header_len) + " bytes, over the " + std::to_string(kMaxHeaderBytes) +
               "-byte limit");
  if (header_len > file_size - 8)
    throw fail("header is " + std::to_string(header_len) + " bytes but the file has only " +
               std::to_string(file_size - 8) + " after the length");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(head.begin() + 8, head.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  } catch (const nlohmann::json::exception& e) {
    throw fail("header is not valid JSON: " + files::printable(e.what(), true));
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  return header;
}

std::map<std::string, std::string> read_metadata(const nlohmann::json& entry, const HeaderError& fail) {
  if (!entry.is_object()) throw fail("__metadata__ is not an object");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_string()) throw fail("__metadata__." + files::printable(key) + " is not a string");
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

// One tensor's entry: its dtype known, its shape's byte count (overflow-checked) equal to its
// data_offsets' span, which lies within the `data_size` bytes of data.
TensorInfo read_entry(const std::string& name, const nlohmann::json& entry, std::uint64_t data_size,
                      const HeaderError& fail) {
  if (!entry.is_object()) throw fail(name + ": entry is not an object");
  if (!entry.contains("dtype") || !entry["dtype"].is_string()) throw fail(name + ": no dtype");
  const auto dtype = parse_dtype(entry["dtype"].get<std::string>());
  if (!dtype) throw fail(name + ": unknown dtype " + files::printable(entry["dtype"].get<std::string>()));
  if (!entry.contains("shape") || !entry["shape"].is_array()) throw fail(name + ": no shape");
  if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
    throw fail(name + ": data_offsets is not [begin, end]");

  TensorInfo info;
  info.dtype = *dtype;
  std::uint64_t n_bytes = dtype_size(*dtype);
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_unsigned()) throw fail(name + ": shape holds a value that is not a whole number ≥ 0");
    info.shape.push_back(d.get<std::uint64_t>());
    const auto next = checked_mul(n_bytes, info.shape.back());
    if (!next) throw fail(name + ": shape " + entry["shape"].dump() + " is too large");
    n_bytes = *next;
  }
  const auto& off = entry["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw fail(name + ": data_offsets are not whole numbers ≥ 0");
  info.begin = off[0].get<std::uint64_t>();
  info.end = off[1].get<std::uint64_t>();
  if (info.end < info.begin)
    throw fail(name + ": data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
               "] end before they begin");
  if (info.end > data_size)
    throw fail(name + ": data_offsets end at byte " + std::to_string(info.end) + ", past the " +
               std::to_string(data_size) + " bytes of data");
  if (info.end - info.begin != n_bytes)
    throw fail(name + ": " + std::string(dtype_name(info.dtype)) + " " + shape_string(info.shape) + " needs " +
               std::to_string(n_bytes) + " bytes, data_offsets give " + std::to_string(info.end - info.begin));
  return info;
}

// The tensors must tile the data section: sorted by offset, each starts where the last ended,
// and the last ends where the data does.
void check_tiling(const std::map<std::string, TensorInfo>& tensors, std::uint64_t data_size, const HeaderError& fail) {
  std::vector<std::pair<std::string, const TensorInfo*>> order;
  for (const auto& [name, info] : tensors) order.emplace_back(name, &info);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->begin != b.second->begin ? a.second->begin < b.second->begin : a.second->end < b.second->end;
  });
  std::uint64_t expected_begin = 0;
  std::string previous;
  for (const auto& [key_in_file, info] : order) {
    const std::string name = files::printable(key_in_file);
    if (info->begin < expected_begin)
      throw fail(name + ": data overlaps " + previous + " (starts at byte " + std::to_string(info->begin) +
                 ", " + previous + " ends at " + std::to_string(expected_begin) + ")");
    if (info->begin > expected_begin)
      throw fail(name + ": gap of " + std::to_string(info->begin - expected_begin) + " bytes before its data");
    expected_begin = info->end;
    previous = name;
  }
  if (expected_begin != data_size)
    throw fail("file has " + std::to_string(data_size - expected_begin) +
               " bytes of data after the last tensor; the header accounts for " + std::to_string(expected_begin));
}

}  // namespace

TensorFile TensorFile::parse_header(std::span<const std::uint8_t> head, std::uint64_t file_size,
                                      const std::string& source) {
  const HeaderError fail{source};
  const nlohmann::json header = read_header_json(head, file_size, fail);
  TensorFile st;
  st.source_ = source;
  st.data_start_ = 8 + header_length(head);  // checked against the file by read_header_json
  const std::uint64_t data_size = file_size - st.data_start_;
  for (const auto& [key_in_file, entry] : header.items()) {
    if (key_in_file == "__metadata__")
      st.metadata_ = read_metadata(entry, fail);
    else
      st.tensors_[key_in_file] = read_entry(files::printable(key_in_file), entry, data_size, fail);
  }
  check_tiling(st.tensors_, data_size, fail);
  st.tensors_ = without_wrapper_prefixes(std::move(st.tensors_), source);  // as a .pth's are
  return st;
}

TensorFile TensorFile::from_memory(std::vector<std::uint8_t> data, std::map<std::string, TensorInfo> tensors,
                                     std::map<std::string, std::string> metadata, const std::string& source) {
  for (const auto& [name, info] : tensors) {
    std::uint64_t n_bytes = dtype_size(info.dtype);
    for (auto d : info.shape)
      if (__builtin_mul_overflow(n_bytes, d, &n_bytes)) throw Error(source + ": " + files::printable(name) + " is too large");
    if (info.end < info.begin || info.end > data.size() || info.end - info.begin != n_bytes)
      throw Error(source + ": " + files::printable(name) + " does not fit its bytes");
  }
  TensorFile st;
  st.source_ = source;
  st.bytes_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(data));
  st.metadata_ = std::move(metadata);
  st.tensors_ = std::move(tensors);
  return st;
}

const TensorInfo* TensorFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

// n values of dtype t at `from` (any alignment) → float32 at `to`.
struct ConvertJob {
  DType dtype;
  const std::uint8_t* from;
  std::size_t n;
  float* to;
};

void convert(void* job) {
  const auto& j = *static_cast<const ConvertJob*>(job);
  const std::uint8_t* p = j.from;
  switch (j.dtype) {
    case DType::F32:
      std::memcpy(j.to, p, j.n * 4);
      break;
    case DType::F64:
      for (std::size_t i = 0; i < j.n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        j.to[i] = static_cast<float>(d);
      }
      break;
    case DType::F16:
      for (std::size_t i = 0; i < j.n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        j.to[i] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
      }
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < j.n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        j.to[i] = static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
      }
      break;
    default:
      break;  // refused by the caller before
  }
}

}  // namespace

const TensorInfo& TensorFile::float_tensor(const std::string& name, const std::vector<std::uint64_t>& expected) const {
  const TensorInfo* info = find(name);
  if (!info) throw Error(source_ + ": tensor " + files::printable(name) + " is missing (expected " + shape_string(expected) + ")");
  if (info->shape != expected)
    throw Error(source_ + ": " + files::printable(name) + " is " + shape_string(info->shape) + ", expected " + shape_string(expected));
  if (!is_float(info->dtype))
    throw Error(source_ + ": " + files::printable(name) + " has dtype " + dtype_name(info->dtype) +
                "; weights must be F32, F16, BF16 or F64");
  return *info;
}

std::optional<TensorFile::InPlace> TensorFile::floats_in_place(const std::string& name,
                                                                 const std::vector<std::uint64_t>& expected) const {
  const TensorInfo& info = float_tensor(name, expected);
  if (info.dtype != DType::F32) return std::nullopt;
  const std::uint8_t* at = data() + data_start_ + info.begin;
  if (reinterpret_cast<std::uintptr_t>(at) % alignof(float) != 0) return std::nullopt;
  std::shared_ptr<const void> owner = map_ ? std::shared_ptr<const void>(map_) : std::shared_ptr<const void>(bytes_);
  return InPlace{reinterpret_cast<const float*>(at), std::move(owner)};
}

void TensorFile::read_floats(const std::string& name, const std::vector<std::uint64_t>& expected, float* out) const {
  const TensorInfo* info = &float_tensor(name, expected);
  const std::size_t n = static_cast<std::size_t>(info->element_count());
  if (n == 0) return;
  files::prefault_for_writing(out, n * sizeof(float));  // `out` is usually fresh: no fault per page while converting
  ConvertJob job{info->dtype, data() + data_start_ + info->begin, n, out};
  if (!map_) {
    convert(&job);
    return;
  }
  if (!files::MappedFile::guarded(convert, &job))
    throw Error(source_ + ": the file shrank while it was being read (another program truncated it?)");
  map_->release(static_cast<std::size_t>(data_start_ + info->begin), static_cast<std::size_t>(info->end - info->begin));
}

std::vector<float> TensorFile::floats(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (!info) throw Error(source_ + ": tensor " + files::printable(name) + " is missing");
  return floats(name, info->shape);
}

std::vector<float> TensorFile::floats(const std::string& name, const std::vector<std::uint64_t>& expected) const {
  const TensorInfo* info = find(name);
  std::vector<float> out(info && info->shape == expected && is_float(info->dtype) ? info->element_count() : 0);
  read_floats(name, expected, out.data());
  return out;
}

std::vector<std::uint8_t> encode_safetensors(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  // nlohmann's ordered_json keeps insertion order, so the header lists tensors as the data does.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = 1;
    for (auto d : t.shape) n *= d;
    if (n != t.values.size())
      throw Error("safetensors: " + t.name + " has " + std::to_string(t.values.size()) + " values for shape " +
                  shape_string(t.shape));
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::vector<std::uint8_t> out;
  out.resize(8 + json.size() + offset);  // not out(n): GCC 12 -O3 then sees a null data() (-Wnull-dereference)
  const std::uint64_t len = json.size();
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, json.data(), json.size());
  std::uint8_t* p = out.data() + 8 + json.size();
  for (const auto& t : tensors) {
    if (t.values.empty()) continue;  // memcpy from a null pointer is undefined even for 0 bytes
    std::memcpy(p, t.values.data(), 4 * t.values.size());
    p += 4 * t.values.size();
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const auto bytes = encode_safetensors(tensors, metadata);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::tensors
