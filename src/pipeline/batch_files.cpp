#include "batch_files.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "report_gallery.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

// The parts of the finished image jobs, in input order.
std::vector<fs::path> finished_parts(const BatchFile& file, const std::vector<InputJob>& jobs, const OutputSet& outputs) {
  std::vector<fs::path> parts;
  for (const InputJob& job : jobs)
    if (!job.video && job_finished(job, outputs)) parts.push_back(with_suffix(job.output_base, file.part_suffix));
  return parts;
}

// header, then the rows of every part; a part that does not start with the header is left
// out with a line in `errors`.
std::string gathered_csv(const BatchFile& file, const std::vector<fs::path>& parts, std::vector<std::string>& errors) {
  const std::string header = std::string(file.header) + "\n";
  std::string csv = header;
  for (const fs::path& part : parts) {
    const std::vector<std::uint8_t> bytes = io::read_file(part);
    const std::string text(bytes.begin(), bytes.end());
    if (text.compare(0, header.size(), header) != 0) {
      errors.push_back(fmt::format("{}: not a part of {} (its first line is not \"{}\"); left out of it",
                                   io::display(part), file.name, file.header));
      continue;
    }
    csv.append(text, header.size());
  }
  return csv;
}

void write_one(const fs::path& out, const BatchFile& file, const std::vector<InputJob>& jobs, const OutputSet& outputs,
               BatchFilesWritten& result) {
  const fs::path path = out / file.name;
  const std::vector<fs::path> parts = finished_parts(file, jobs, outputs);
  switch (file.kind) {
    case BatchFileKind::csv: {
      std::error_code ec;  // never followed out of the output folder
      if (fs::is_symlink(fs::symlink_status(path, ec)))
        throw Error(fmt::format("{}: is a symbolic link; not written", io::display(path)));
      const std::string csv = gathered_csv(file, parts, result.errors);
      io::write_file_atomic(path, csv.data(), csv.size());
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
  const auto images = static_cast<std::size_t>(
      std::count_if(jobs.begin(), jobs.end(), [](const InputJob& job) { return !job.video; }));
  for (const BatchFile& file : batch_files()) {
    if (!(outputs.*file.on) || images < file.min_images) continue;
    try {
      write_one(out, file, jobs, outputs, result);
    } catch (const Error& e) {
      result.errors.emplace_back(e.what());
    }
  }
  return result;
}

}  // namespace vitattn::pipeline
