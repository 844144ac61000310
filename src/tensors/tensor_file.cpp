#include "tensors/tensor_file.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/file_kind.hpp"
#include "files/text.hpp"
#include "files/mapped_file.hpp"
#include "tensors/pth_reader.hpp"

namespace vitattn::tensors {
namespace {

// A safetensors file has no nested dicts: a key for one is a mistake, said rather than ignored.
void refuse_key(const std::string& source, const std::string& key) {
  if (!key.empty())
    throw Error(source + ": a key (" + files::printable(key) + ") picks a dict inside a PyTorch file; this is safetensors");
}

}  // namespace

bool is_pytorch_file(const std::filesystem::path& path, std::span<const std::uint8_t> head, std::uint64_t file_size) {
  static const std::uint8_t zip_magic[4] = {'P', 'K', 3, 4};
  if (head.size() >= 4 && std::equal(zip_magic, zip_magic + 4, head.begin())) return true;
  if (files::is_kind(files::FileKind::safetensors, head, file_size)) return false;
  const std::string ext = files::lower_extension(path);
  return ext == ".pth" || ext == ".pt" || ext == ".bin";
}

TensorFile load_tensor_file(const std::filesystem::path& path, const std::string& key) {
  // A safetensors file stays mapped (TensorFile::map); a PyTorch file is read whole, its zip
  // entries parsed from memory. What the file is comes from the mapping's first bytes.
  auto map = std::make_shared<const files::MappedFile>(path);
  const auto head = map->copy(0, 16);
  if (!head) throw Error(files::display(path) + ": the file shrank while it was being read (another program truncated it?)");
  if (is_pytorch_file(path, *head, map->size())) return parse_pth(files::read_file(path), files::display(path), key);
  refuse_key(files::display(path), key);
  return TensorFile::map(std::move(map), files::display(path));
}

TensorFile parse_tensor_file(std::vector<std::uint8_t> bytes, const std::string& source, const std::string& key) {
  if (is_pytorch_file(source, std::span(bytes).first(std::min<std::size_t>(bytes.size(), 16)), bytes.size())) return parse_pth(bytes, source, key);
  refuse_key(source, key);
  return TensorFile::parse(std::move(bytes), source);
}

}  // namespace vitattn::tensors
