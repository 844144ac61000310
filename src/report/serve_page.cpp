#include "report/serve_page.hpp"

#include <fmt/format.h>

#include "report/html_page.hpp"
#include "report_assets.hpp"

namespace vitattn::report {

std::string serve_page_html() {
  const PageTemplate page{report_assets::serve_html_text, report_assets::report_css_text,
                          report_assets::report_css_sha256, report_assets::serve_js_text,
                          report_assets::serve_js_sha256};
  return render_page(page, {});
}

std::string serve_page_csp() {
  return fmt::format("default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; connect-src 'self'; "
                     "frame-src 'self'; img-src data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                     report_assets::serve_js_sha256, report_assets::report_css_sha256);
}

}  // namespace vitattn::report
