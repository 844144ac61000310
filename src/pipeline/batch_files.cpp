#include "batch_files.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "job_record.hpp"
#include "report_gallery.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

// "<out>/.vitattn-batch-files.lock": held while the batch files are gathered and written.
constexpr const char* kLockName = ".vitattn-batch-files.lock";

// The output bases of the done image jobs whose parts are gathered, in order: the batch's in
// input order, then those of every other done image job whose settings record lies in the
// output tree (another batch's into the same folder, with the same settings), by path. A
// folder that cannot be listed is a line in `errors`, and what was found is still used.
std::vector<fs::path> done_images(const fs::path& out, const std::vector<InputJob>& jobs, const OutputSet& outputs,
                                  std::vector<std::string>& errors) {
  std::vector<fs::path> bases;
  std::set<fs::path> in_batch;
  for (const InputJob& job : jobs) {
    if (job.video) continue;
    in_batch.insert(job.output_base.lexically_normal());
    if (job_finished(job, outputs)) bases.push_back(job.output_base);
  }
  if (outputs.settings.empty()) return bases;  // no records to find the others by
  const std::string record = settings_suffix();
  std::vector<fs::path> others;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(out, fs::directory_options::skip_permission_denied, ec);
  for (const auto end = fs::recursive_directory_iterator(); !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= record.size() || name.compare(name.size() - record.size(), record.size(), record) != 0) continue;
    const fs::path base = it->path().parent_path() / name.substr(0, name.size() - record.size());
    if (!in_batch.count(base.lexically_normal()) && job_state(base, outputs, false) == JobState::done)
      others.push_back(base);
  }
  if (ec) errors.push_back(fmt::format("{}: cannot list the output folder for other batches' images: {}", files::display(out),
                                       ec.message()));
  std::sort(others.begin(), others.end());
  bases.insert(bases.end(), others.begin(), others.end());
  return bases;
}

// header, then the rows of every part; a part that does not start with the header is left
// out with a line in `errors`.
std::string gathered_csv(const BatchFile& file, const std::vector<fs::path>& parts, std::vector<std::string>& errors) {
  const std::string header = std::string(file.header) + "\n";
  std::string csv = header;
  for (const fs::path& part : parts) {
    const std::vector<std::uint8_t> bytes = files::read_file(part);
    const std::string text(bytes.begin(), bytes.end());
    if (text.compare(0, header.size(), header) != 0) {
      errors.push_back(fmt::format("{}: not a part of {} (its first line is not \"{}\"); left out of it",
                                   files::display(part), file.name, file.header));
      continue;
    }
    csv.append(text, header.size());
  }
  return csv;
}

void write_one(const fs::path& out, const BatchFile& file, const std::vector<fs::path>& images, BatchFilesWritten& result) {
  const fs::path path = out / file.name;
  std::vector<fs::path> parts;
  for (const fs::path& base : images) parts.push_back(with_suffix(base, file.part_suffix));
  switch (file.kind) {
    case BatchFileKind::csv: {
      std::error_code ec;  // never followed out of the output folder
      if (fs::is_symlink(fs::symlink_status(path, ec)))
        throw Error(fmt::format("{}: is a symbolic link; not written", files::display(path)));
      const std::string csv = gathered_csv(file, parts, result.errors);
      files::write_file_atomic(path, csv.data(), csv.size());
      break;
    }
    case BatchFileKind::gallery: {
      std::vector<fs::path> pages;
      for (const fs::path& part : parts) pages.push_back(part.lexically_relative(out));
      write_report_gallery(out, pages);
      break;
    }
  }
  result.written.push_back(path);
}

}  // namespace

BatchFilesWritten write_batch_files(const fs::path& out, const std::vector<InputJob>& jobs, const OutputSet& outputs) {
  BatchFilesWritten result;
  const bool any = std::any_of(batch_files().begin(), batch_files().end(), [&](const BatchFile& f) { return outputs.*f.on; });
  if (!any) return result;
  try {
    const files::LockFile lock(out / kLockName);  // another batch into this folder waits here
    const std::vector<fs::path> images = done_images(out, jobs, outputs, result.errors);
    const auto batch_images = static_cast<std::size_t>(
        std::count_if(jobs.begin(), jobs.end(), [](const InputJob& job) { return !job.video; }));
    for (const BatchFile& file : batch_files()) {
      if (!(outputs.*file.on) || std::max(batch_images, images.size()) < file.min_images) continue;
      try {
        write_one(out, file, images, result);
      } catch (const Error& e) {
        result.errors.emplace_back(e.what());
      }
    }
  } catch (const Error& e) {  // the lock
    result.errors.emplace_back(std::string(e.what()) + "; no batch file written");
  }
  return result;
}

}  // namespace vitattn::pipeline
