#pragma once
// One entry point for a file of named tensors, whatever its format: safetensors, or a
// PyTorch checkpoint (by its extension .pth/.pt/.bin, or the zip magic "PK\3\4" that
// torch.save writes). Both come back as the SafeTensors the model loaders take.
#include <filesystem>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"

namespace vitattn::io {

// True for a PyTorch checkpoint (by name, or by the zip magic at the start of `bytes`).
bool is_pytorch_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes);

// `key`: the dict inside a PyTorch file that holds the weights (pth_reader.hpp); empty picks
// one. A safetensors file has no nested dicts, so a key is refused there. Throws Error "PATH: …".
SafeTensors load_tensor_file(const std::filesystem::path& path, const std::string& key = {});

// The same choice and the same readers on a file's bytes already in memory (the fuzzers):
// `source` stands for the file's name, in messages and by its extension.
SafeTensors parse_tensor_file(std::vector<std::uint8_t> bytes, const std::string& source, const std::string& key = {});

}  // namespace vitattn::io
