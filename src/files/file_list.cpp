#include "files/file_list.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::files {
namespace {

// Everything `fd` gives until end of file, whatever it is (file, pipe, FIFO, terminal).
std::string read_all(int fd, const std::string& name) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("{}: cannot read the file list: {}", name, std::strerror(errno)));
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::vector<std::filesystem::path> parse_file_list(std::string_view text, bool nul_separated,
                                                   const std::string& source) {
  const char end = nul_separated ? '\0' : '\n';
  std::vector<std::filesystem::path> paths;
  std::size_t line = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t stop = text.find(end, start);
    if (stop == std::string_view::npos) stop = text.size();  // the last entry may lack its separator
    std::string_view entry = text.substr(start, stop - start);
    start = stop + 1;
    ++line;
    if (!nul_separated) {
      if (entry.find('\0') != std::string_view::npos)
        throw Error(fmt::format("{}: line {} holds a NUL byte: the list looks NUL-separated", source, line));
      if (!entry.empty() && entry.back() == '\r') entry.remove_suffix(1);
    }
    if (!entry.empty()) paths.emplace_back(entry);
  }
  return paths;
}

std::vector<std::filesystem::path> read_file_list(const std::string& list, bool nul_separated) {
  if (list == "-") return parse_file_list(read_all(STDIN_FILENO, "standard input"), nul_separated, "standard input");
  const int fd = ::open(list.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot read the file list: {}", display(list), std::strerror(errno)));
  std::string text;
  try {
    text = read_all(fd, display(list));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return parse_file_list(text, nul_separated, display(list));
}

}  // namespace vitattn::files
