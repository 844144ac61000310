#include "environment.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

// The variable's value; "" when unset or empty (huggingface_hub treats both alike).
std::string value(const EnvLookup& env, const char* name) { return env(name).value_or(""); }

fs::path cache_dir(const EnvLookup& env) {
  if (const std::string v = value(env, "HF_HUB_CACHE"); !v.empty()) return v;
  if (const std::string v = value(env, "HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;
  if (const std::string v = value(env, "HF_HOME"); !v.empty()) return fs::path(v) / "hub";
  if (const std::string v = value(env, "XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
  const std::string home = value(env, "HOME");
  if (home.empty()) throw Error("no Hugging Face cache folder: HF_HUB_CACHE, HF_HOME and HOME are all unset");
  return fs::path(home) / ".cache" / "huggingface" / "hub";
}

bool offline(const EnvLookup& env) {
  std::string v = value(env, "HF_HUB_OFFLINE");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

}  // namespace

std::optional<std::string> process_environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

hub::HubSettings hub_settings(const EnvLookup& env) {
  hub::HubSettings hub;
  if (const std::string e = value(env, "HF_ENDPOINT"); !e.empty()) hub.endpoint = e;
  while (hub.endpoint.ends_with('/')) hub.endpoint.pop_back();
  hub.token = value(env, "HF_TOKEN");
  if (hub.token.empty()) hub.token = value(env, "HUGGING_FACE_HUB_TOKEN");
  hub.cache_dir = cache_dir(env);
  hub.offline = offline(env);
  hub.give_token = "set HF_TOKEN to a token";
  hub.offline_reason = "HF_HUB_OFFLINE is set";
  return hub;
}

fs::path vitattn_cache_dir(const EnvLookup& env) {
  if (const std::string v = value(env, "XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "vitattn";
  if (const std::string home = value(env, "HOME"); !home.empty()) return fs::path(home) / ".cache" / "vitattn";
  return {};
}

fs::path video_module_override(const EnvLookup& env) { return value(env, "VITATTN_VIDEO_MODULE"); }

}  // namespace vitattn::cli
