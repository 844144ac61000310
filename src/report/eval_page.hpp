#pragma once
// `vitattn eval`'s eval.html: the metrics table of eval.csv ranked per metric and the mean
// curves of eval_curves.csv, as one offline page (src/report/eval.*, the report's style and
// Content-Security-Policy: html_page.hpp).
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace vitattn::report {

struct EvalPageMetric {
  std::string name;             // "positive_auc"
  bool lower_is_better = false;
};
struct EvalPageRow {
  std::string method, metric;
  std::string value;  // as eval.csv writes it, so the page shows the same text
  std::size_t images = 0;
};
struct EvalPagePoint {
  std::string method, curve;
  double x = 0.0, value = 0.0;
};

// Temporary file, then rename. `metrics`: every metric in the page's order.
void write_eval_page(const std::filesystem::path& path, const std::vector<EvalPageMetric>& metrics,
                     const std::vector<EvalPageRow>& rows, const std::vector<EvalPagePoint>& curves);

}  // namespace vitattn::report
