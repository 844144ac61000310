// The hub cache's names and layout, offline mode, and the hashes downloads are checked with.
// (Where the cache is, from the environment: environment_test.cpp.)
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "hub/hf_cache.hpp"
#include "hub/hf_download.hpp"
#include "hub/hf_model.hpp"
#include "test_util.hpp"

namespace vitattn::hub {
namespace {
namespace fs = std::filesystem;

TEST(HfCache, ParsesModelNames) {
  const HfRepo a = parse_hf_model("hf:facebook/dinov2-small");
  EXPECT_EQ(a.id, "facebook/dinov2-small");
  EXPECT_EQ(a.revision, "main");
  const HfRepo b = parse_hf_model("hf:timm/vit_small_patch16_224.augreg_in21k_ft_in1k@refs/pr/3");
  EXPECT_EQ(b.id, "timm/vit_small_patch16_224.augreg_in21k_ft_in1k");
  EXPECT_EQ(b.revision, "refs/pr/3");
  for (const char* bad : {"facebook/dinov2", "hf:dinov2", "hf:a/b/c", "hf:/b", "hf:a/", "hf:a/b@", "hf:a/b@../x",
                          "hf:../b", "hf:a--x/b", "hf:a/b c"})
    EXPECT_THROW(parse_hf_model(bad), Error) << bad;
}

TEST(HfCache, RefsSnapshotsBlobsLayout) {
  test::TempDir dir;
  const std::string commit(40, 'a');
  HfCache cache(dir.path(), parse_hf_model("hf:org/name@v1"));
  EXPECT_EQ(cache.repo_dir(), dir.path() / "models--org--name");
  EXPECT_FALSE(cache.commit());
  cache.write_ref(commit);
  std::ifstream ref(dir.path() / "models--org--name" / "refs" / "v1");
  std::string text;
  std::getline(ref, text);
  EXPECT_EQ(text, commit);  // the bare hash, as huggingface_hub writes it
  EXPECT_EQ(fs::file_size(dir.path() / "models--org--name" / "refs" / "v1"), 40u);  // no newline
  EXPECT_EQ(cache.commit(), commit);

  const std::string etag(64, 'b');
  fs::create_directories(cache.blob_path(etag).parent_path());
  std::ofstream(cache.blob_path(etag)) << "bytes";
  EXPECT_FALSE(cache.cached_file(commit, "model.safetensors"));
  cache.link_snapshot(commit, "model.safetensors", etag);
  const fs::path link = cache.repo_dir() / "snapshots" / commit / "model.safetensors";
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), fs::path("../../blobs") / etag);
  EXPECT_EQ(cache.cached_file(commit, "model.safetensors"), link);
  EXPECT_EQ(cache.incomplete_path(etag), cache.blob_path(etag).string() + ".incomplete");
  EXPECT_EQ(cache.lock_path(etag), dir.path() / ".locks" / "models--org--name" / (etag + ".lock"));

  EXPECT_FALSE(cache.known_missing(commit, "config.json"));
  cache.mark_missing(commit, "config.json");
  EXPECT_TRUE(cache.known_missing(commit, "config.json"));

  // A revision that is a commit hash stands for itself, with no ref file.
  HfCache pinned(dir.path(), parse_hf_model("hf:org/name@" + std::string(40, 'c')));
  EXPECT_EQ(pinned.commit(), std::string(40, 'c'));
}

// Offline with nothing cached: refused before any request, in the caller's words for why (the
// hub library reads no environment, so it cannot name the variable itself).
TEST(HfModel, OfflineWithoutTheModelCachedSaysWhyInTheCallersWords) {
  test::TempDir dir;
  HubSettings hub;
  hub.endpoint = "http://127.0.0.1:1";  // refuses connections: a request would say "cannot reach"
  hub.cache_dir = dir.path();
  hub.offline = true;
  hub.offline_reason = "the switch is on";
  try {
    resolve_hf_model("hf:org/name", hub);
    FAIL() << "resolved offline with an empty cache";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "hf:org/name: not in the Hugging Face cache (" + dir.path().string() +
                                         ") at revision main, and the switch is on: no download");
  }
  hub.cache_dir.clear();
  EXPECT_THROW(resolve_hf_model("hf:org/name", hub), Error);  // no cache folder: said, not guessed
}

TEST(HfDownload, HashesOfKnownContents) {
  test::TempDir dir;
  const fs::path empty = dir.path() / "empty", abc = dir.path() / "abc";
  std::ofstream(empty).flush();
  std::ofstream(abc) << "abc";
  EXPECT_EQ(sha256_file(abc), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
  EXPECT_EQ(git_blob_sha1_file(empty), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");  // git's empty blob
}

}  // namespace
}  // namespace vitattn::hub
