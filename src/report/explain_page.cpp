#include "report/explain_page.hpp"

#include "files/file_io.hpp"
#include "report/html_page.hpp"
#include "report_assets.hpp"

namespace vitattn::report {

void write_explain_page(const std::filesystem::path& path, const std::string& data_json) {
  const PageTemplate page{report_assets::explain_html_text, report_assets::report_css_text,
                          report_assets::report_css_sha256, report_assets::explain_js_text,
                          report_assets::explain_js_sha256};
  const std::string html = render_page(page, {{"DATA", script_safe_json(data_json)}});
  files::write_file_atomic(path, html.data(), html.size());
}

}  // namespace vitattn::report
