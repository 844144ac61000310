#include "output_guard.hpp"

#include <sys/stat.h>

#include <utility>

#include "files/file_io.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

// " (out/predictions.csv)" when the other file goes by another name; nothing when it is the
// same name (the role then says enough).
std::string other_name(const fs::path& file, const fs::path& other) {
  return file.lexically_normal() == other.lexically_normal() ? std::string() : " (" + files::display(other) + ")";
}

}  // namespace

OutputGuard::Key OutputGuard::key_of(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) return {st.st_dev, st.st_ino, {}};  // follows symlinks: the file itself
  // Not there (yet): the folder resolved once (many outputs share one), then the name.
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  auto [it, fresh] = folders_.try_emplace(folder);
  if (fresh) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(folder, ec);
    it->second = ec ? folder.lexically_normal() : fs::weakly_canonical(absolute, ec);
    if (ec) it->second = absolute.lexically_normal();
  }
  return {0, 0, (it->second / file.filename()).lexically_normal().string()};
}

Error OutputGuard::clash(const Entry& written, const Entry& other) {
  const std::string name = files::display(written.file);
  const std::string also = other_name(written.file, other.file);
  if (!other.written) {  // an output would replace a file the run reads
    if (written.named) return Error({written.role, name}, "is " + other.role + also + "; not replaced");
    return Error(name + ": is " + other.role + also + " and where " + written.role +
                 " goes; nothing done (leave it out, or choose another output folder)");
  }
  // Two outputs, one file: whichever is written second would replace the first.
  if (written.named)
    return Error({written.role, name}, "is where " + other.role + " goes too" + also + "; choose another name");
  return Error(name + ": is where " + written.role + " goes and where " + other.role + " goes" + also +
               "; nothing done");
}

void OutputGuard::add(Entry entry) {
  const auto [it, fresh] = files_.try_emplace(key_of(entry.file), entry);
  if (fresh) return;
  const Entry& known = it->second;
  if (!entry.written && !known.written) return;  // read twice: harmless
  // The message is about the output; when both are, about the one the caller named.
  const bool first_is_subject = !entry.written || (known.written && known.named && !entry.named);
  throw first_is_subject ? clash(known, entry) : clash(entry, known);
}

void OutputGuard::reads(const fs::path& file, const std::string& role) { add({file, role, false, false}); }

void OutputGuard::writes(const fs::path& file, const std::string& role, std::optional<files::FileKind> kind) {
  add({file, role, true, true});
  if (kind) files::check_replaceable(file, *kind, role);  // after: "an input" says more than "a JPEG image"
}

void OutputGuard::derives(const fs::path& file, const std::string& role) { add({file, role, true, false}); }

void OutputGuard::jobs(const BatchPlan& plan, const OutputSet& outputs) {
  for (const InputJob& job : plan.jobs) add({job.input, roles::input, false, false});
  for (const InputJob& job : plan.jobs) {
    const std::string role = "the output of " + files::display(job.input);
    for (const fs::path& p : output_paths(job.output_base, outputs, job.video)) {
      derives(p, role);
      check_kind(p, role);
    }
  }
}

void OutputGuard::check_kind(const fs::path& file, const std::string& role) {
  const auto kind = replaces_only(file);
  if (!kind) return;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(file, ec))) return;  // refused when its job writes it, for that job alone
  if (const auto why = files::not_replaceable(file, *kind))
    throw Error(files::display(file) + ": exists and " + *why + ", where " + role +
                " goes; nothing done (remove it, or choose another output folder)");
}

}  // namespace vitattn::pipeline
