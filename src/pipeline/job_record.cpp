#include "job_record.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

bool is_plain_file(const fs::path& p) {
  struct stat st {};  // lstat: a symlink at an output's name is not an output
  return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// True when the file at `record` is a regular file holding exactly `settings`.
bool record_holds(const fs::path& record, const std::string& settings) {
  if (!is_plain_file(record)) return false;
  try {
    const std::vector<std::uint8_t> bytes = files::read_file(record, settings.size() + 1);
    return bytes.size() == settings.size() && std::equal(bytes.begin(), bytes.end(), settings.begin());
  } catch (const Error&) {  // larger than the settings, or unreadable: not this run's record
    return false;
  }
}

// Every output of the job that is a regular file, removed; what cannot be is left (the job's
// own error says what went wrong).
void remove_outputs(const InputJob& job, const OutputSet& outputs) {
  for (const fs::path& p : output_paths(job.output_base, outputs, job.video))
    if (is_plain_file(p)) ::unlink(p.c_str());
}

}  // namespace

JobState job_state(const fs::path& output_base, const OutputSet& outputs, bool video) {
  const fs::path record = with_suffix(output_base, settings_suffix().c_str());
  for (const fs::path& p : output_paths(output_base, outputs, video))
    if (p != record && !is_plain_file(p)) return JobState::to_do;
  if (outputs.settings.empty()) return JobState::done;
  return record_holds(record, outputs.settings) ? JobState::done : JobState::stale;
}

void commit_job(const InputJob& job, const OutputSet& outputs, const std::function<void()>& write) {
  const fs::path record = with_suffix(job.output_base, settings_suffix().c_str());
  if (!outputs.settings.empty() && ::unlink(record.c_str()) != 0 && errno != ENOENT)
    throw Error(files::display(job.input) + ": cannot remove the settings record " + files::display(record) + ": " +
                std::strerror(errno));
  try {
    write();
    if (!outputs.settings.empty()) files::write_file_atomic(record, outputs.settings.data(), outputs.settings.size());
  } catch (...) {
    remove_outputs(job, outputs);
    throw;
  }
}

}  // namespace vitattn::pipeline
