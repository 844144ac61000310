#pragma once
// A batch's gallery of report pages, <out>/index.html (the page format: report/report_page.hpp;
// which pages it lists: batch_files.hpp).
#include <filesystem>
#include <vector>

namespace vitattn::pipeline {

// Writes <out>/index.html (report_index_name()) listing `pages` (relative to `out`); throws
// Error "<index>: …" when the name is a symbolic link: never followed out of the output
// folder. Returns the gallery's path.
std::filesystem::path write_report_gallery(const std::filesystem::path& out, const std::vector<std::filesystem::path>& pages);

}  // namespace vitattn::pipeline
