#include "report_gallery.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "report/report_page.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;

fs::path write_report_gallery(const fs::path& out, const std::vector<fs::path>& pages) {
  const fs::path index = out / report_index_name();
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(index, ec)))
    throw Error(fmt::format("{}: is a symbolic link; the gallery is not written", files::display(index)));
  report::write_report_index(index, pages);
  return index;
}

}  // namespace vitattn::pipeline
