#pragma once
// The Hugging Face hub cache, laid out exactly as huggingface_hub lays it out, so that files
// it fetched serve vitattn and files vitattn fetched serve it:
//   <cache>/models--ORG--NAME/refs/<revision>             the commit hash a branch or tag points to
//   <cache>/models--ORG--NAME/snapshots/<commit>/<file>   a relative symlink to ../../blobs/<etag>
//   <cache>/models--ORG--NAME/blobs/<etag>                the bytes (sha256 for LFS files, git sha1 else)
//   <cache>/models--ORG--NAME/.no_exist/<commit>/<file>   the hub said the file does not exist
//   <cache>/.locks/models--ORG--NAME/<etag>.lock          held while one process fetches a blob
// A blob being fetched is blobs/<etag>.incomplete, renamed only once complete and verified.
#include <filesystem>
#include <optional>
#include <string>

#include "files/file_io.hpp"

namespace vitattn::hub {

struct HfRepo {
  std::string id;                 // "ORG/NAME"
  std::string revision = "main";  // branch, tag or commit hash
};

// True when `text` names a hub model ("hf:…").
bool is_hf_model(const std::string& text);

// "hf:ORG/NAME[@REVISION]" → {ORG/NAME, REVISION or main}. Throws Error on anything else
// (empty parts, more than one slash, characters the hub does not allow in a repo id, "..").
HfRepo parse_hf_model(const std::string& text);

// A 40-digit lowercase hex string: a commit hash, not a branch or tag.
bool is_commit_hash(const std::string& revision);

class HfCache {
 public:
  HfCache(std::filesystem::path root, HfRepo repo);

  const std::filesystem::path& root() const { return root_; }
  const HfRepo& repo() const { return repo_; }
  std::filesystem::path repo_dir() const;  // root/models--ORG--NAME

  // The commit the revision stands for here: itself when it is a hash, else refs/<revision>.
  std::optional<std::string> commit() const;

  // snapshots/<commit>/<file> when it exists (following its symlink to an existing blob).
  std::optional<std::filesystem::path> cached_file(const std::string& commit, const std::string& file) const;
  // .no_exist/<commit>/<file> is there: the hub said so before.
  bool known_missing(const std::string& commit, const std::string& file) const;

  std::filesystem::path blob_path(const std::string& etag) const;
  std::filesystem::path incomplete_path(const std::string& etag) const;  // blob + ".incomplete"
  std::filesystem::path lock_path(const std::string& etag) const;
  // The exclusive lock on lock_path(etag), held for the object's life: its folders made, the
  // file kept when released, as huggingface_hub's processes lock it too (files::LockFile).
  files::LockFile lock_blob(const std::string& etag) const;

  // Writers. Each makes its folders, and replaces atomically what it writes (temp + rename).
  void write_ref(const std::string& commit) const;  // refs/<revision>, unless the revision is a hash
  void link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const;
  void mark_missing(const std::string& commit, const std::string& file) const;

 private:
  std::filesystem::path root_;
  HfRepo repo_;
};

}  // namespace vitattn::hub
