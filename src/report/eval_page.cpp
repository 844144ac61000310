#include "report/eval_page.hpp"

#include <nlohmann/json.hpp>

#include "files/file_io.hpp"
#include "report/html_page.hpp"
#include "report_assets.hpp"

namespace vitattn::report {

void write_eval_page(const std::filesystem::path& path, const std::vector<EvalPageMetric>& metrics,
                     const std::vector<EvalPageRow>& rows, const std::vector<EvalPagePoint>& curves) {
  nlohmann::json data{{"metrics", nlohmann::json::array()}, {"rows", nlohmann::json::array()},
                      {"curves", nlohmann::json::array()}};
  for (const EvalPageMetric& m : metrics) data["metrics"].push_back({{"name", m.name}, {"lower_is_better", m.lower_is_better}});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const EvalPageRow& r = rows[i];
    data["rows"].push_back({{"method", r.method}, {"metric", r.metric}, {"value", r.value}, {"images", r.images}, {"order", i}});
  }
  for (const EvalPagePoint& p : curves)
    data["curves"].push_back({{"method", p.method}, {"curve", p.curve}, {"x", p.x}, {"value", p.value}});
  const PageTemplate page{report_assets::eval_html_text, report_assets::report_css_text, report_assets::report_css_sha256,
                          report_assets::eval_js_text, report_assets::eval_js_sha256};
  const std::string html = render_page(page, {{"DATA", script_safe_json(data.dump())}});
  files::write_file_atomic(path, html.data(), html.size());
}

}  // namespace vitattn::report
