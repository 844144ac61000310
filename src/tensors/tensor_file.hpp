#pragma once
// One entry point for a file of named tensors, whatever its format: safetensors, or a
// PyTorch checkpoint. What a file is comes from its bytes, whatever its name: the zip magic
// "PK\3\4" that torch.save writes, or a safetensors header (files/file_kind.hpp); a file that
// is neither goes by its name (.pth/.pt/.bin: the PyTorch reader, which names the legacy
// format; else the safetensors reader, which says what is wrong). Both come back as the
// TensorFile the model loaders take, without the wrapper prefixes (pth_reader.hpp).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"

namespace vitattn::tensors {

// True for a PyTorch checkpoint: `head` (the file's first bytes, 16 are enough) starts with the
// zip magic, or is no safetensors header and the name ends .pth, .pt or .bin.
bool is_pytorch_file(const std::filesystem::path& path, std::span<const std::uint8_t> head, std::uint64_t file_size);

// `key`: the dict inside a PyTorch file that holds the weights (pth_reader.hpp); empty picks
// one. A safetensors file has no nested dicts, so a key is refused there. Throws Error "PATH: …".
TensorFile load_tensor_file(const std::filesystem::path& path, const std::string& key = {});

// The same choice and the same readers on a file's bytes already in memory (the fuzzers):
// `source` stands for the file's name, in messages and by its extension.
TensorFile parse_tensor_file(std::vector<std::uint8_t> bytes, const std::string& source, const std::string& key = {});

}  // namespace vitattn::tensors
