#pragma once
// The environment variables vitattn reads for its libraries, read here and nowhere below the
// command line: the libraries take these settings as values (HubSettings,
// set_video_module_path), so what they do never depends on a variable a caller cannot see.
// (The batch scheduler's variables for --shard auto are scheduler_env.hpp's.)
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "hub/hf_download.hpp"

namespace vitattn::cli {

// A variable's value, or nothing when it is not set: the process's environment, or a map in tests.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The process's environment as an EnvLookup.
std::optional<std::string> process_environment(const char* name);

// The hub's settings as huggingface_hub reads them. An empty variable counts as unset.
//   endpoint   HF_ENDPOINT, else https://huggingface.co (trailing slashes dropped)
//   token      HF_TOKEN, else HUGGING_FACE_HUB_TOKEN (its old name)
//   cache_dir  HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE (its old name), else HF_HOME/hub, else
//              $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
//   offline    HF_HUB_OFFLINE set to 1, ON, YES or TRUE (any case)
// and the messages' words for them. Throws Error when no cache folder can be found (no HOME).
hub::HubSettings hub_settings(const EnvLookup& env);

// vitattn's own cache folder (the text-embedding cache: pipeline/class_embeddings.hpp), by
// the XDG base directory rule as the hub's base is found: $XDG_CACHE_HOME/vitattn, else
// ~/.cache/vitattn (HOME). Empty when neither is set: then there is no cache.
std::filesystem::path vitattn_cache_dir(const EnvLookup& env);

// VITATTN_VIDEO_MODULE: the video module to load instead of the one beside the binary; empty
// when unset (video/video_module.hpp).
std::filesystem::path video_module_override(const EnvLookup& env);

}  // namespace vitattn::cli
