#pragma once
// The native single-head layout in safetensors (see models/README.md): what --save-model
// writes. Reading it is one row of the checkpoint families (checkpoint_families.cpp), opened
// like any other model (open_model.hpp).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/vit.hpp"

namespace vitattn::model {

namespace roles {
inline constexpr const char* saved_model = "the saved model";  // an Error's Subject (core/error.hpp): the file written
}  // namespace roles

// True when the model has the single-head layout's shape: one attention-only block of one
// head (no norm, projection or MLP), no registers, a class position, no final norm, no classifier.
bool has_single_head_layout(const VitModel& model);

// Writes every tensor (biases included, zero when the model has none) as F32, with mean/std
// in __metadata__, so that opening the file gives back the same floats bit for bit. Throws
// Error about roles::saved_model when the model is not of the single-head layout.
void save_model(const std::filesystem::path& path, const VitModel& model);
std::vector<std::uint8_t> encode_model(const VitModel& model);  // the bytes save_model writes

}  // namespace vitattn::model
