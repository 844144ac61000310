#include "hub/hf_download.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "files/text.hpp"
#include "files/file_io.hpp"

namespace vitattn::hub {
namespace fs = std::filesystem;
namespace {

constexpr long kConnectTimeoutS = 10;
constexpr long kStallTimeoutS = 30;  // a transfer with no byte for this long counts as dropped

// curl_global_init once per process, before any thread uses curl.
void init_curl() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  if (!done) throw Error("cannot initialise libcurl");
}

using Curl = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using Headers = std::map<std::string, std::string>;  // lowercase name → value, of the last response

Curl make_curl() {
  init_curl();
  Curl c(curl_easy_init(), &curl_easy_cleanup);
  if (!c) throw Error("cannot start a libcurl session");
  return c;
}

// One header line; a status line ("HTTP/…") starts a new response, whose headers replace the last one's.
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& headers = *static_cast<Headers*>(user);
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {
    headers.clear();
  } else if (const auto colon = line.find(':'); colon != std::string::npos) {
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    headers[files::lower_case(line.substr(0, colon))] = value;
  }
  return size * n;
}

std::string header(const Headers& h, const char* name) {
  const auto it = h.find(name);
  return it == h.end() ? std::string() : it->second;
}

// "\"abc\"" or W/"abc" → abc
std::string clean_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e.erase(0, 2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

std::string escape(CURL* c, const std::string& s) {
  char* e = curl_easy_escape(c, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

std::string host_of(const std::string& url) {
  const auto scheme = url.find("://");
  const std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  return url.substr(start, url.find('/', start) - start);
}

void set_common(CURL* c, const HubSettings& hub, const std::string& url, Headers& headers, curl_slist* extra) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "vitattn/" "0.1");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, kStallTimeoutS);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &headers);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, extra);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  // The token goes to the hub's own host only: never to a CDN a redirect points at.
  if (!hub.token.empty() && host_of(url) == host_of(hub.endpoint)) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, hub.token.c_str());
  }
}

std::string repo_name(const HfRepo& repo) { return "hf:" + repo.id; }

// The hub's answer to a failed request, in one line. Advice about a token is worded by the
// caller (HubSettings::give_token): this library does not know where a token comes from.
[[noreturn]] void throw_http(const HubSettings& hub, const HfRepo& repo, const std::string& file, long status,
                             const Headers& h) {
  const std::string code = header(h, "x-error-code");
  const std::string name = repo_name(repo);
  const bool sent = !hub.token.empty();
  if (code == "GatedRepo")
    throw Error(fmt::format("{}: gated repository ({}): accept its conditions on the hub, then {} of that account",
                            name, status, hub.give_token));
  if (code == "RepoNotFound")
    throw Error(fmt::format("{}: no such repository on the hub ({}){}", name, status,
                            status == 401 && !sent ? "; if it is private, " + hub.give_token : ""));
  if (status == 401)
    throw Error(fmt::format("{}: not found, or private or gated (401 Unauthorized){}", name,
                            sent ? ": the token was sent but not accepted" : ": " + hub.give_token + " if you have access"));
  if (status == 403) throw Error(fmt::format("{}: access denied (403 Forbidden) to {}", name, file));
  if (code == "RevisionNotFound") throw Error(fmt::format("{}: no revision {} on the hub (404)", name, repo.revision));
  throw Error(fmt::format("{}: the hub answered HTTP {} for {}", name, status, file));
}

[[noreturn]] void throw_curl(const HfRepo& repo, const std::string& url, CURLcode rc, const char* detail) {
  throw Error(fmt::format("{}: cannot reach {}: {}", repo_name(repo), files::printable(url, true), *detail ? detail : curl_easy_strerror(rc)));
}

// Relative redirects (a renamed repository) are followed, others reported: the GET follows those.
bool is_relative(const std::string& location) { return location.find("://") == std::string::npos; }

std::string join_relative(const std::string& url, const std::string& location) {
  const auto scheme = url.find("://");
  const auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return url.substr(0, path) + (location.starts_with('/') ? location : "/" + location);
}

struct Sink {
  std::FILE* file = nullptr;
  CURL* curl = nullptr;
  std::uint64_t offset = 0;   // bytes already in the file when this GET started
  std::uint64_t written = 0;  // bytes this GET added
  long status = 0;            // the final response's, set at the first body byte
  bool restarted = false;     // asked for a range, got the whole file: started again from 0
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& s = *static_cast<Sink*>(user);
  if (s.status == 0) {
    curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &s.status);
    if (s.status >= 300) return 0;  // an error page is not the file
    if (s.status == 200 && s.offset > 0) {  // the server ignored the Range: take the whole file anew
      if (std::fflush(s.file) != 0 || ::ftruncate(::fileno(s.file), 0) != 0 || std::fseek(s.file, 0, SEEK_SET) != 0) return 0;
      s.offset = 0;
      s.restarted = true;
    }
  }
  const std::size_t bytes = size * n;
  if (std::fwrite(data, 1, bytes, s.file) != bytes) return 0;
  s.written += bytes;
  return bytes;
}

struct ProgressState {
  const HubSettings* hub;
  const std::string* file;
  const Sink* sink;
  std::uint64_t total;
};

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto& p = *static_cast<ProgressState*>(user);
  p.hub->progress(*p.file, p.sink->offset + p.sink->written, p.total);
  return 0;
}

std::uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

// One GET of `info.location` appended to `part`. Returns true when the transfer completed;
// false after a dropped connection (the bytes so far stay in `part`). Throws on HTTP errors.
bool get_once(const HubSettings& hub, const HfRepo& repo, const HubFileInfo& info, const std::string& file,
              const fs::path& part) {
  Sink sink;
  sink.offset = file_size_or_zero(part);
  if (info.size && sink.offset == *info.size) return true;  // a previous run got every byte
  if (info.size && sink.offset > *info.size) {
    fs::remove(part);
    sink.offset = 0;
  }
  sink.file = std::fopen(part.c_str(), sink.offset ? "ab" : "wb");
  if (!sink.file) throw Error(fmt::format("{}: cannot write {}", repo_name(repo), files::display(part)));
  const std::unique_ptr<std::FILE, decltype(&std::fclose)> closer(sink.file, &std::fclose);

  const Curl curl = make_curl();
  sink.curl = curl.get();
  Headers headers;
  curl_slist* extra = curl_slist_append(nullptr, "Accept-Encoding: identity");
  const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> extra_owner(extra, &curl_slist_free_all);
  set_common(curl.get(), hub, info.location, headers, extra);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  const std::string range = fmt::format("{}-", sink.offset);
  if (sink.offset > 0) curl_easy_setopt(curl.get(), CURLOPT_RANGE, range.c_str());
  ProgressState progress{&hub, &file, &sink, info.size.value_or(0)};
  if (hub.progress) {
    curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &progress);
  }
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(curl.get());
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (std::fflush(sink.file) != 0) throw Error(fmt::format("{}: cannot write {}", repo_name(repo), files::display(part)));
  if (status >= 300 && (rc == CURLE_OK || rc == CURLE_WRITE_ERROR)) {
    if (status == 416 && info.size && sink.offset == *info.size) return true;
    throw_http(hub, repo, file, status, headers);
  }
  if (rc == CURLE_WRITE_ERROR) throw Error(fmt::format("{}: cannot write {}", repo_name(repo), files::display(part)));
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) throw_curl(repo, info.location, rc, error);
  return rc == CURLE_OK;
}

std::string hex(const unsigned char* d, unsigned n) {
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += fmt::format("{:02x}", d[i]);
  return s;
}

std::string digest_file(const fs::path& path, const EVP_MD* md, const std::string& prefix) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f || !ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) {
    if (f) std::fclose(f);
    throw Error(fmt::format("{}: cannot read it to check its hash", files::display(path)));
  }
  const std::unique_ptr<std::FILE, decltype(&std::fclose)> closer(f, &std::fclose);
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  std::vector<unsigned char> buf(1 << 20);
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) EVP_DigestUpdate(ctx.get(), buf.data(), n);
  if (std::ferror(f)) throw Error(fmt::format("{}: read error while checking its hash", files::display(path)));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return hex(out, len);
}

bool is_hex(const std::string& s, std::size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// The etag names the blob on disk: it must be a plain file name.
void check_etag(const HfRepo& repo, const std::string& file, const std::string& etag) {
  if (etag.empty() || etag.size() > 256 || etag.find('/') != std::string::npos || etag == "." || etag == ".." ||
      std::any_of(etag.begin(), etag.end(), [](unsigned char c) { return c < 0x21 || c > 0x7e; }))
    throw Error(fmt::format("{}: the hub gave {} no usable ETag", repo_name(repo), file));
}

void verify(const HfRepo& repo, const std::string& file, const HubFileInfo& info, const fs::path& part) {
  const std::uint64_t got = file_size_or_zero(part);
  if (info.size && got != *info.size)
    throw Error(fmt::format("{}: {} is {} bytes, the hub said {}", repo_name(repo), file, got, *info.size));
  const std::string etag = files::lower_case(info.etag);
  std::string actual, kind;
  if (is_hex(etag, 64)) actual = sha256_file(part), kind = "sha256";
  else if (is_hex(etag, 40)) actual = git_blob_sha1_file(part), kind = "git sha1";
  else return;  // an etag that is no hash: nothing to check against (huggingface_hub checks none either)
  if (actual != etag) {
    fs::remove(part);
    throw Error(fmt::format("{}: checksum mismatch for {}: {} {}, the hub says {}; the download was removed",
                            repo_name(repo), file, kind, actual, etag));
  }
}

}  // namespace

std::optional<HubFileInfo> hub_file_info(const HubSettings& hub, const HfRepo& repo, const std::string& file) {
  const Curl curl = make_curl();
  std::string url = fmt::format("{}/{}/resolve/{}/{}", hub.endpoint, repo.id, escape(curl.get(), repo.revision),
                                escape(curl.get(), file));
  Headers headers;
  curl_slist* extra = curl_slist_append(nullptr, "Accept-Encoding: identity");
  const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> extra_owner(extra, &curl_slist_free_all);
  for (int hop = 0;; ++hop) {
    set_common(curl.get(), hub, url, headers, extra);
    curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl.get());
    if (rc != CURLE_OK) throw_curl(repo, url, rc, error);
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    const std::string location = header(headers, "location");
    if (status >= 300 && status < 400 && is_relative(location) && !location.empty() && hop < 5) {
      url = join_relative(url, location);  // a renamed repository: same host, ask again
      continue;
    }
    if (status == 404 && (header(headers, "x-error-code") == "EntryNotFound" || header(headers, "x-error-code").empty()))
      return std::nullopt;
    if (status >= 400) throw_http(hub, repo, file, status, headers);
    HubFileInfo info;
    info.commit = header(headers, "x-repo-commit");
    info.etag = clean_etag(header(headers, "x-linked-etag").empty() ? header(headers, "etag") : header(headers, "x-linked-etag"));
    info.location = status >= 300 && !location.empty() ? location : url;
    std::string size = header(headers, "x-linked-size");
    if (size.empty()) size = header(headers, "content-length");
    if (!size.empty() && std::all_of(size.begin(), size.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      info.size = std::stoull(size);
    if (!is_commit_hash(info.commit))
      throw Error(fmt::format("{}: the hub gave no commit hash (X-Repo-Commit) for {}", repo_name(repo), file));
    check_etag(repo, file, info.etag);
    return info;
  }
}

fs::path fetch_to_cache(const HubSettings& hub, const HfCache& cache, const HubFileInfo& info, const std::string& file) {
  const HfRepo& repo = cache.repo();
  check_etag(repo, file, info.etag);
  const fs::path blob = cache.blob_path(info.etag);
  {
    // One process fetches a blob at a time; the others wait and then find it done.
    const files::LockFile lock = cache.lock_blob(info.etag);
    std::error_code ec;
    if (!fs::is_regular_file(blob, ec)) {
      fs::create_directories(blob.parent_path(), ec);
      if (ec) throw Error(fmt::format("{}: cannot create cache folder: {}", files::display(blob.parent_path()), ec.message()));
      const fs::path part = cache.incomplete_path(info.etag);
      bool complete = false;
      for (int attempt = 0; attempt < std::max(1, hub.attempts) && !complete; ++attempt)
        complete = get_once(hub, repo, info, file, part);
      if (!complete)
        throw Error(fmt::format("{}: the download of {} broke off at {} of {} bytes, {} times; run again to resume",
                                repo_name(repo), file, file_size_or_zero(part),
                                info.size ? std::to_string(*info.size) : std::string("?"), std::max(1, hub.attempts)));
      verify(repo, file, info, part);
      fs::rename(part, blob, ec);
      if (ec) throw Error(fmt::format("{}: cannot move it into the cache: {}", files::display(blob), ec.message()));
    }
  }
  cache.link_snapshot(info.commit, file, info.etag);
  return cache.repo_dir() / "snapshots" / info.commit / file;
}

std::string sha256_file(const fs::path& path) { return digest_file(path, EVP_sha256(), ""); }

std::string git_blob_sha1_file(const fs::path& path) {
  std::string prefix = fmt::format("blob {}", file_size_or_zero(path));
  prefix.push_back('\0');
  return digest_file(path, EVP_sha1(), prefix);
}

}  // namespace vitattn::hub
