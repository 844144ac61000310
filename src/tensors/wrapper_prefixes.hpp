#pragma once
// The prefixes a training wrapper puts before every name: DistributedDataParallel's "module.",
// DINO's "backbone.", a LightningModule's or an EMA wrapper's "model.". Removed from every tensor file, safetensors and .pth alike, so that a
// state dict reads the same whatever wrapper saved it and whatever format it was converted to.
#include <cstring>
#include <map>
#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::tensors {

inline constexpr const char* kWrapperPrefixes[] = {"module.", "backbone.", "model."};

// `tensors` with each prefix removed, in turn, from the names that start with it. Throws Error
// "SOURCE: removing the prefix module. makes two tensors named …" when two names become one.
template <class T>
std::map<std::string, T> without_wrapper_prefixes(std::map<std::string, T> tensors, const std::string& source) {
  for (const char* prefix : kWrapperPrefixes) {
    std::map<std::string, T> renamed;
    for (auto& [name, t] : tensors) {
      const std::string n = name.starts_with(prefix) ? name.substr(std::strlen(prefix)) : name;
      if (!renamed.emplace(n, std::move(t)).second)
        throw Error(source + ": removing the prefix " + prefix + " makes two tensors named " + files::printable(n));
    }
    tensors = std::move(renamed);
  }
  return tensors;
}

}  // namespace vitattn::tensors
