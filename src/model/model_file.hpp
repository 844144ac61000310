#pragma once
// The native single-head layout in safetensors (see models/README.md): one row of the
// checkpoint families (checkpoint_families.cpp) to read, and the writer --save-model uses.
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/vit.hpp"

namespace vitattn::io {

namespace roles {
inline constexpr const char* saved_model = "the saved model";  // an Error's Subject (core/error.hpp): the file written
}  // namespace roles

// Loads and validates any model file vitattn reads (the single-head layout included);
// throws Error naming the file and the offending tensor.
VitModel load_model(const std::filesystem::path& path);

// Same, from the file's bytes already in memory; `source` names them in errors.
VitModel parse_model(std::vector<std::uint8_t> bytes, const std::string& source);

// True when the model has the single-head layout's shape: one attention-only block of one
// head (no norm, projection or MLP), no registers, a class position, no final norm, no classifier.
bool has_single_head_layout(const VitModel& model);

// Writes every tensor (biases included, zero when the model has none) as F32, with mean/std
// in __metadata__, so that loading the file gives back the same floats bit for bit. Throws
// Error about roles::saved_model when the model is not of the single-head layout.
void save_model(const std::filesystem::path& path, const VitModel& model);
std::vector<std::uint8_t> encode_model(const VitModel& model);  // the bytes save_model writes

// "0.485,0.456,0.406" → {0.485, 0.456, 0.406}; throws Error naming `what` otherwise.
std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what);

}  // namespace vitattn::io
