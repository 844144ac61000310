#pragma once
// --model hf:ORG/NAME[@REVISION]: the cache first, else the hub, with a progress bar on a terminal.
#include <filesystem>

#include "options.hpp"

namespace vitattn::cli {

// The local weights file that o.model names (snapshots/<commit>/…). Throws Error in one line.
std::filesystem::path fetch_hf_model(const Options& o);

}  // namespace vitattn::cli
