#include "output_folders.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::pipeline {
using files::display;
namespace fs = std::filesystem;

void prepare_output_folder(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(display(out) + ": cannot create output folder: " + ec.message());
  if (!fs::is_directory(out, ec)) throw Error(display(out) + ": output path exists and is not a folder");
  if (::access(out.c_str(), W_OK | X_OK) != 0)
    throw Error(display(out) + ": output folder is not writable: " + std::strerror(errno));
}

fs::path below(const fs::path& root, const fs::path& p) {
  const fs::path rel = p.lexically_relative(root);
  if (rel.empty() || rel.is_absolute()) return {};
  for (const auto& part : rel)
    if (part.empty() || part == "." || part == "..") return {};
  return rel;
}

void prepare_output_path(const fs::path& out_dir, const InputJob& job, const OutputSet& outputs) {
  const std::string input = display(job.input);
  const fs::path rel = below(out_dir, with_suffix(job.output_base, (job.video ? video_output_suffixes(outputs) : output_suffixes(outputs)).front().c_str()));
  if (rel.empty()) throw Error(input + ": output " + display(job.output_base) + " is not below " + display(out_dir));
  // Walk down from the output folder one name at a time with lstat, never through a link.
  fs::path dir = out_dir;
  for (const auto& part : rel.parent_path()) {
    dir /= part;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
      if (errno != ENOENT)
        throw Error(input + ": cannot use output folder " + display(dir) + ": " + std::strerror(errno));
      if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error(input + ": cannot create output folder " + display(dir) + ": " + std::strerror(errno));
      if (::lstat(dir.c_str(), &st) != 0)  // made by us or, just now, by another worker
        throw Error(input + ": cannot use output folder " + display(dir) + ": " + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
      throw Error(input + ": " + display(dir) + " in the output folder is a symbolic link; not followed, nothing written");
    if (!S_ISDIR(st.st_mode)) throw Error(input + ": " + display(dir) + " in the output folder is not a folder");
  }
  for (const fs::path& file : output_paths(job.output_base, outputs, job.video)) {
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) continue;  // not there yet: the usual case
    if (S_ISLNK(st.st_mode))
      throw Error(input + ": " + display(file) + " is a symbolic link; not replaced, nothing written");
    if (!S_ISREG(st.st_mode)) throw Error(input + ": " + display(file) + " exists and is not a file; not replaced");
  }
}

}  // namespace vitattn::pipeline
