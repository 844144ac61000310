// run_serve for the `vitattn` binary: the server lives in a second executable, vitattn-serve,
// beside it (or in <bin>/../lib/vitattn), which this replaces the process with, same arguments and
// environment. Why: cpp-httplib is Debian's compiled library, which links OpenSSL, zlib and brotli;
// every start of vitattn would open and relocate them in the dynamic loader (CPU paid by every run,
// docs/performance.md) for a command most runs never use. The options were parsed and checked here
// already (serve_options.cpp, the same rules in both binaries), so a bad flag is refused before the
// exec; after it, the server is the process (Ctrl-C, the exit status).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "files/companion.hpp"
#include "serve_command.hpp"

namespace vitattn::cli {
namespace {

constexpr const char* kServerName = "vitattn-serve";

// This process's arguments as the kernel holds them (NUL-separated /proc/self/cmdline).
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all;
  for (char c; in.get(c);) all += c;
  std::vector<std::string> args;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

}  // namespace

int run_serve(const ServeOptions&, int) {
  std::vector<std::string> args = own_arguments();
  if (args.empty()) throw Error("serve: cannot read this process's arguments (/proc/self/cmdline)");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string tried;
  for (const std::filesystem::path& server : files::companion_candidates(kServerName)) {
    args.front() = server.string();
    argv.front() = args.front().data();
    ::execv(server.c_str(), argv.data());  // returns only when it failed
    tried += (tried.empty() ? "" : "; ") + server.string() + ": " + std::strerror(errno);
  }
  throw Error(std::string("serve: the server executable ") + kServerName + " was not found beside vitattn (" + tried +
              "); install it with vitattn");
}

}  // namespace vitattn::cli
