#include "tensors/tensor_file.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/text.hpp"
#include "files/mapped_file.hpp"
#include "tensors/pth_reader.hpp"

namespace vitattn::io {

bool is_pytorch_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  const std::string ext = lower_extension(path);
  if (ext == ".pth" || ext == ".pt" || ext == ".bin") return true;
  static const std::uint8_t zip_magic[4] = {'P', 'K', 3, 4};
  return bytes.size() >= 4 && std::equal(zip_magic, zip_magic + 4, bytes.begin());
}

SafeTensors load_tensor_file(const std::filesystem::path& path, const std::string& key) {
  // A safetensors file stays mapped (SafeTensors::map); a PyTorch file is read whole, its zip
  // entries parsed from memory. The zip magic is looked for in the mapping's first bytes.
  auto map = std::make_shared<const MappedFile>(path);
  const auto magic = map->copy(0, 4);
  if (!magic) throw Error(display(path) + ": the file shrank while it was being read (another program truncated it?)");
  if (is_pytorch_file(path, *magic)) return parse_pth(read_file(path), display(path), key);
  if (!key.empty())
    throw Error(display(path) + ": a key (" + printable(key) + ") picks a dict inside a PyTorch file; this is safetensors");
  return SafeTensors::map(std::move(map), display(path));
}

}  // namespace vitattn::io
