#include "tensor_file.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "file_io.hpp"
#include "pth_reader.hpp"

namespace vitattn::io {

bool is_pytorch_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".pth" || ext == ".pt" || ext == ".bin") return true;
  static const std::uint8_t zip_magic[4] = {'P', 'K', 3, 4};
  return bytes.size() >= 4 && std::equal(zip_magic, zip_magic + 4, bytes.begin());
}

SafeTensors load_tensor_file(const std::filesystem::path& path, const std::string& key) {
  std::vector<std::uint8_t> bytes = read_file(path);
  if (is_pytorch_file(path, bytes)) return parse_pth(bytes, display(path), key);
  if (!key.empty())
    throw Error(display(path) + ": a key (" + printable(key) + ") picks a dict inside a PyTorch file; this is safetensors");
  return SafeTensors::parse(std::move(bytes), display(path));
}

}  // namespace vitattn::io
