// The environment the command line reads for the libraries, through a lookup of the test's own
// (no setenv): the hub's settings in huggingface_hub's order, the video module's path.
#include "cli/environment.hpp"

#include <gtest/gtest.h>

#include <map>

#include "core/error.hpp"

namespace vitattn::cli {
namespace {
namespace fs = std::filesystem;

struct FakeEnvironment {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> std::optional<std::string> {
      const auto it = vars.find(name);
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  }
};

TEST(Environment, VitattnsCacheFolderByTheXdgRule) {
  FakeEnvironment env;
  EXPECT_EQ(vitattn_cache_dir(env.lookup()), fs::path());  // nowhere to put it: no cache
  env.vars["HOME"] = "/home/u";
  EXPECT_EQ(vitattn_cache_dir(env.lookup()), fs::path("/home/u/.cache/vitattn"));
  env.vars["XDG_CACHE_HOME"] = "/xdg";
  EXPECT_EQ(vitattn_cache_dir(env.lookup()), fs::path("/xdg/vitattn"));
  env.vars["HF_HOME"] = "/hfhome";  // the hub's variables are the hub's
  EXPECT_EQ(vitattn_cache_dir(env.lookup()), fs::path("/xdg/vitattn"));
  env.vars["XDG_CACHE_HOME"] = "";  // empty counts as unset
  EXPECT_EQ(vitattn_cache_dir(env.lookup()), fs::path("/home/u/.cache/vitattn"));
}

TEST(Environment, CacheFolderInHuggingfaceHubsOrder) {
  FakeEnvironment env;
  EXPECT_THROW(hub_settings(env.lookup()), Error);  // no HOME, nothing else: no folder to guess
  env.vars["HOME"] = "/home/u";
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/home/u/.cache/huggingface/hub"));
  env.vars["XDG_CACHE_HOME"] = "/xdg";
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/xdg/huggingface/hub"));
  env.vars["HF_HOME"] = "/hfhome";
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/hfhome/hub"));
  env.vars["HUGGINGFACE_HUB_CACHE"] = "/old";
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/old"));
  env.vars["HF_HUB_CACHE"] = "/new";
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/new"));
  env.vars["HF_HUB_CACHE"] = "";  // empty counts as unset
  EXPECT_EQ(hub_settings(env.lookup()).cache_dir, fs::path("/old"));
}

TEST(Environment, OfflineAsHuggingfaceHubReadsIt) {
  FakeEnvironment env;
  env.vars["HOME"] = "/home/u";
  EXPECT_FALSE(hub_settings(env.lookup()).offline);
  for (const char* on : {"1", "true", "ON", "yes"}) {
    env.vars["HF_HUB_OFFLINE"] = on;
    EXPECT_TRUE(hub_settings(env.lookup()).offline) << on;
  }
  for (const char* off : {"0", "", "no", "false"}) {
    env.vars["HF_HUB_OFFLINE"] = off;
    EXPECT_FALSE(hub_settings(env.lookup()).offline) << off;
  }
  EXPECT_NE(hub_settings(env.lookup()).offline_reason.find("HF_HUB_OFFLINE"), std::string::npos);
}

TEST(Environment, EndpointAndTokenWithTheOldNameSecond) {
  FakeEnvironment env;
  env.vars["HOME"] = "/home/u";
  hub::HubSettings hub = hub_settings(env.lookup());
  EXPECT_EQ(hub.endpoint, "https://huggingface.co");
  EXPECT_EQ(hub.token, "");
  EXPECT_NE(hub.give_token.find("HF_TOKEN"), std::string::npos);  // the advice names the variable
  env.vars["HF_ENDPOINT"] = "http://127.0.0.1:8080//";
  env.vars["HUGGING_FACE_HUB_TOKEN"] = "old";
  hub = hub_settings(env.lookup());
  EXPECT_EQ(hub.endpoint, "http://127.0.0.1:8080");
  EXPECT_EQ(hub.token, "old");
  env.vars["HF_TOKEN"] = "new";
  EXPECT_EQ(hub_settings(env.lookup()).token, "new");
}

TEST(Environment, VideoModulePath) {
  FakeEnvironment env;
  EXPECT_EQ(video_module_override(env.lookup()), fs::path());
  env.vars["VITATTN_VIDEO_MODULE"] = "/opt/m.so";
  EXPECT_EQ(video_module_override(env.lookup()), fs::path("/opt/m.so"));
}

}  // namespace
}  // namespace vitattn::cli
