#pragma once
// A model named hf:ORG/NAME[@REVISION]: found in the Hugging Face cache, else fetched from the
// hub into it (unless HubSettings::offline): the weights (model.safetensors, else pytorch_model.bin)
// and, when the repository has them, config.json, preprocessor_config.json and spiece.model
// (SigLIP's tokeniser).
#include <filesystem>
#include <string>

#include "hub/hf_download.hpp"

namespace vitattn::hub {

struct HfModelFiles {
  std::filesystem::path weights;   // snapshots/<commit>/<file>; config files sit beside it
  std::string commit;
  bool downloaded = false;         // false: everything came from the cache
};

// Throws Error in one line: a malformed name, not cached while offline, not on the hub, gated,
// a checksum mismatch, a hub out of reach.
HfModelFiles resolve_hf_model(const std::string& name, const HubSettings& hub);

}  // namespace vitattn::hub
