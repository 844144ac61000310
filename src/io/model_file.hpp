#pragma once
// The native single-head model layout in safetensors (see models/README.md).
#include <filesystem>

#include "core/model.hpp"

namespace vitattn::io {

// Loads and validates a model; throws Error naming the file and the offending tensor.
SingleHeadModel load_model(const std::filesystem::path& path);
class SafeTensors;
SingleHeadModel load_model(const SafeTensors& st);

// Writes every tensor (biases included) as F32, with mean/std in __metadata__, so that
// loading the file gives back the same floats bit for bit.
void save_model(const std::filesystem::path& path, const SingleHeadModel& model);

// "0.485,0.456,0.406" → {0.485, 0.456, 0.406}; throws Error naming `what` otherwise.
std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what);

}  // namespace vitattn::io
