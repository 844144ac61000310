#pragma once
// The native single-head model layout in safetensors (see models/README.md).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model.hpp"

namespace vitattn::io {

// Loads and validates a model; throws Error naming the file and the offending tensor.
SingleHeadModel load_model(const std::filesystem::path& path);
class SafeTensors;
SingleHeadModel load_model(const SafeTensors& st);

// Same, from the file's bytes already in memory; `source` names them in errors.
SingleHeadModel parse_model(std::vector<std::uint8_t> bytes, const std::string& source);

// Writes every tensor (biases included) as F32, with mean/std in __metadata__, so that
// loading the file gives back the same floats bit for bit.
void save_model(const std::filesystem::path& path, const SingleHeadModel& model);
std::vector<std::uint8_t> encode_model(const SingleHeadModel& model);  // the bytes save_model writes

// "0.485,0.456,0.406" → {0.485, 0.456, 0.406}; throws Error naming `what` otherwise.
std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what);

}  // namespace vitattn::io
