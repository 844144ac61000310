#pragma once
// --model hf:ORG/NAME[@REVISION]: the cache first, else the hub, with a progress bar on a terminal.
#include <filesystem>

#include <string>

namespace vitattn::cli {

// The local weights file that `model` (hf:ORG/NAME[@REVISION]) names (snapshots/<commit>/…);
// a download shows its progress on a terminal unless `verbosity` < 0. Throws Error in one line.
std::filesystem::path fetch_hf_model(const std::string& model, int verbosity);

}  // namespace vitattn::cli
