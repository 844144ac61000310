#pragma once
// Three numbers "r,g,b", as a normalisation's mean or std is written: on the command line
// (--mean/--std), in a checkpoint's __metadata__, and by the single-head layout's writer.
#include <array>
#include <string>

namespace vitattn::model {

// "0.485,0.456,0.406" → {0.485, 0.456, 0.406}: three finite numbers, spaces allowed around
// each. Throws Error "WHAT is \"TEXT\", expected three numbers \"r,g,b\"" otherwise.
std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what);

// The inverse, with as many digits as a float needs to come back bit for bit.
std::string format_rgb_triplet(const std::array<float, 3>& values);

}  // namespace vitattn::model
