#pragma once
// A batch's report pages and their gallery, <out>/index.html (the page format is io/report_page).
#include <filesystem>
#include <vector>

#include "batch_plan.hpp"

namespace vitattn::pipeline {

// Every job's <name>_report.html, relative to `out`, whether written now or by the run that
// skip-existing resumes: the gallery lists what is on disk of these.
std::vector<std::filesystem::path> report_pages(const std::vector<ImageJob>& jobs, const std::filesystem::path& out);

// Writes <out>/index.html (report_index_name()) listing `pages`; throws Error "<index>: …"
// when the name is a symbolic link: never followed out of the output folder.
// Returns the gallery's path.
std::filesystem::path write_report_gallery(const std::filesystem::path& out, const std::vector<std::filesystem::path>& pages);

}  // namespace vitattn::pipeline
