#pragma once
// Fetching files from a Hugging Face hub (HubSettings::endpoint) into the cache (hf_cache.hpp) with
// libcurl, the way huggingface_hub does: a HEAD on /ORG/NAME/resolve/REV/FILE for the commit
// (X-Repo-Commit), the blob's id (X-Linked-Etag for LFS files, else ETag) and where the bytes
// are (a redirect to a CDN), then a GET there into blobs/<etag>.incomplete, resumed with a
// Range request after a dropped connection, verified, and only then renamed into place.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "hub/hf_cache.hpp"

namespace vitattn::hub {

// Everything the hub code needs to know, as values: this library reads no environment (the
// command line does: cli/environment.hpp), so a test or another caller sets these directly.
struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing slash
  std::string token;                                 // sent as a Bearer token to the endpoint's host only
  std::filesystem::path cache_dir;                   // the cache's root (hf_cache.hpp); required
  bool offline = false;                              // the cache only: no request at all
  // The caller's words, in messages, for how its user gives a token and why it is offline (the
  // command line names its environment variables here): only the caller knows where they come from.
  std::string give_token = "give a token";
  std::string offline_reason = "offline mode is on";
  // Told about a download's bytes as they come (total 0 when unknown); may be empty.
  std::function<void(const std::string& file, std::uint64_t done, std::uint64_t total)> progress;
  int attempts = 3;  // GETs per file; each one after a dropped connection resumes where the last stopped
};

struct HubFileInfo {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag, else ETag, without quotes or W/
  std::string location;  // where the GET goes: the redirect's target, else the resolve URL
  std::optional<std::uint64_t> size;  // X-Linked-Size, else Content-Length
};

// The HEAD request. Empty when the repository has no such file (404 EntryNotFound); throws
// Error "hf:ORG/NAME: …" in one line for a missing repository or revision, a gated or
// private one (401/403), another HTTP status, or a hub out of reach.
std::optional<HubFileInfo> hub_file_info(const HubSettings& hub, const HfRepo& repo, const std::string& file);

// GETs the file into the cache (under its lock; nothing is fetched when another process
// already did), checks its size and hash — sha256 for a 64-digit etag (LFS), the git blob
// sha1 for a 40-digit one — renames it into blobs/ and links snapshots/<commit>/<file>.
// A checksum mismatch removes the partial file. Returns the snapshot path. Throws Error.
std::filesystem::path fetch_to_cache(const HubSettings& hub, const HfCache& cache, const HubFileInfo& info,
                                     const std::string& file);

// Lowercase hex digests of a whole file (OpenSSL); the git one is sha1("blob <size>\0" + bytes).
std::string sha256_file(const std::filesystem::path& path);
std::string git_blob_sha1_file(const std::filesystem::path& path);

}  // namespace vitattn::hub
