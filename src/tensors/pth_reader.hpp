#pragma once
// PyTorch checkpoints (.pth, .pt, pytorch_model.bin) as torch.save writes them since 1.6:
// a zip of <dir>/data.pkl (a protocol-2 pickle of the object), <dir>/data/<key> (each
// storage's raw little-endian bytes) and <dir>/version. Read with zip_reader and pickle_vm,
// so nothing in the file is ever run, and handed on as the same TensorFile the
// safetensors path gives the model loader.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tensors/safetensors.hpp"
#include "tensors/wrapper_prefixes.hpp"

namespace vitattn::tensors {

// The dict of tensors inside the pickled object: `key` names it ("teacher"); empty picks the
// first of model, state_dict, teacher, student that is a dict, else the object itself (as
// scripts/pth_to_safetensors.py does). Of its tensors the floating-point ones (F32, F16,
// BF16, F64) are kept, gathered by stride from their storages; "module." and then
// "backbone." are removed from the names that start with them. Throws Error "SOURCE: …".
TensorFile parse_pth(const std::vector<std::uint8_t>& bytes, const std::string& source, const std::string& key = {});
TensorFile load_pth(const std::filesystem::path& path, const std::string& key = {});

// The keys scripts/pth_to_safetensors.py tries, in order, when no key is given.
inline constexpr const char* kNestedStateKeys[] = {"model", "state_dict", "teacher", "student"};

}  // namespace vitattn::tensors
