#include "hub/hf_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::hub {
namespace fs = std::filesystem;
namespace {

// The cache folder's separator, "models" + sep + ORG + sep + NAME: two hyphens, which is why
// repo names may not hold it.
const std::string kRepoSeparator(2, '-');

// huggingface_hub's rule for repo names: letters, digits, '-', '_', '.', no double hyphen or
// "..", no leading or trailing '-' or '.'.
bool valid_part(const std::string& s) {
  if (s.empty() || s.size() > 96) return false;
  if (s.find(kRepoSeparator) != std::string::npos || s.find("..") != std::string::npos) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A revision becomes a file name under refs/: no "..", no absolute path, no control bytes.
bool valid_revision(const std::string& r) {
  if (r.empty() || r.size() > 256 || r.front() == '/' || r.back() == '/') return false;
  for (const char c : r)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\') return false;
  for (const auto& part : fs::path(r))
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

std::string temp_name(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  return fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("{}: cannot create cache folder: {}", files::display(dir), ec.message()));
}

}  // namespace

bool is_hf_model(const std::string& text) { return text.rfind("hf:", 0) == 0; }

HfRepo parse_hf_model(const std::string& text) {
  const auto bad = [&](const char* why) {
    return Error(fmt::format("{}: not a hub model name ({}); expected hf:ORG/NAME or hf:ORG/NAME@REVISION",
                             files::printable(text, true), why));
  };
  if (!is_hf_model(text)) throw bad("no hf: prefix");
  std::string rest = text.substr(3);
  HfRepo repo;
  if (const auto at = rest.find('@'); at != std::string::npos) {
    repo.revision = rest.substr(at + 1);
    rest.resize(at);
    if (!valid_revision(repo.revision)) throw bad("the revision after @ is empty or not a plain name");
  }
  const auto slash = rest.find('/');
  if (slash == std::string::npos || rest.find('/', slash + 1) != std::string::npos)
    throw bad("it needs exactly one / between organisation and name");
  if (!valid_part(rest.substr(0, slash)) || !valid_part(rest.substr(slash + 1)))
    throw bad("organisation and name take letters, digits, -, _ and . only");
  repo.id = rest;
  return repo;
}

bool is_commit_hash(const std::string& r) {
  return r.size() == 40 && std::all_of(r.begin(), r.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); });
}

HfCache::HfCache(fs::path root, HfRepo repo) : root_(std::move(root)), repo_(std::move(repo)) {}

fs::path HfCache::repo_dir() const {
  std::string folder = "models" + kRepoSeparator + repo_.id;
  folder.replace(folder.find('/'), 1, kRepoSeparator);
  return root_ / folder;
}

std::optional<std::string> HfCache::commit() const {
  if (is_commit_hash(repo_.revision)) return repo_.revision;
  std::ifstream in(repo_dir() / "refs" / repo_.revision);
  std::string hash;
  if (!in || !std::getline(in, hash)) return std::nullopt;
  while (!hash.empty() && std::isspace(static_cast<unsigned char>(hash.back()))) hash.pop_back();
  return is_commit_hash(hash) ? std::optional(hash) : std::nullopt;
}

std::optional<fs::path> HfCache::cached_file(const std::string& commit, const std::string& file) const {
  const fs::path p = repo_dir() / "snapshots" / commit / file;
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;  // follows the symlink: a dangling one is no file
  return std::nullopt;
}

bool HfCache::known_missing(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::exists(repo_dir() / ".no_exist" / commit / file, ec);
}

fs::path HfCache::blob_path(const std::string& etag) const { return repo_dir() / "blobs" / etag; }
fs::path HfCache::incomplete_path(const std::string& etag) const { return repo_dir() / "blobs" / (etag + ".incomplete"); }
fs::path HfCache::lock_path(const std::string& etag) const {
  return root_ / ".locks" / repo_dir().filename() / (etag + ".lock");
}

files::LockFile HfCache::lock_blob(const std::string& etag) const {
  const fs::path path = lock_path(etag);
  make_dirs(path.parent_path());
  return files::LockFile(path, files::LockFile::OnRelease::keep);
}

void HfCache::write_ref(const std::string& commit) const {
  if (is_commit_hash(repo_.revision)) return;
  const fs::path ref = repo_dir() / "refs" / repo_.revision;
  make_dirs(ref.parent_path());
  files::write_file_atomic(ref, commit.data(), commit.size());  // huggingface_hub writes the bare hash, no newline
}

void HfCache::link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const {
  const fs::path link = repo_dir() / "snapshots" / commit / file;
  make_dirs(link.parent_path());
  // Relative, as huggingface_hub makes it, so the cache folder can move.
  const fs::path target = fs::relative(blob_path(etag), link.parent_path());
  const fs::path temp = link.parent_path() / temp_name(link);
  std::error_code ec;
  fs::create_symlink(target, temp, ec);
  if (!ec) fs::rename(temp, link, ec);
  if (ec) {
    fs::remove(temp);
    throw Error(fmt::format("{}: cannot link it to its blob: {}", files::display(link), ec.message()));
  }
}

void HfCache::mark_missing(const std::string& commit, const std::string& file) const {
  const fs::path marker = repo_dir() / ".no_exist" / commit / file;
  make_dirs(marker.parent_path());
  files::write_file_atomic(marker, "", 0);
}

}  // namespace vitattn::hub
