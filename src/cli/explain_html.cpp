#include "explain_html.hpp"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "report/explain_page.hpp"
#include "explain.hpp"
#include "files/text.hpp"

namespace vitattn::cli {
namespace {
using nlohmann::json;

json rows(const Matrix& m) {
  json out = json::array();
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    json row = json::array();
    for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(m(i, j));
    out.push_back(std::move(row));
  }
  return out;
}

// One matrix as explain prints it: its label and the digits after the point.
json printed(const std::string& label, const Matrix& m, int precision) {
  return {{"label", label}, {"precision", precision}, {"values", rows(m)}};
}

// An example the page recomputes when the reader edits Q, K or V; `printed` holds what
// `vitattn explain` prints for it, in print order.
json example(const std::string& id, const std::string& title, const Matrix& q, const Matrix& k, const Matrix& v,
             bool masked, json printed_matrices) {
  return {{"id", id}, {"title", title}, {"q", rows(q)}, {"k", rows(k)}, {"v", rows(v)}, {"masked", masked},
          {"printed", std::move(printed_matrices)}};
}

Matrix softmax_of(std::initializer_list<float> s) {
  Matrix m(1, static_cast<Eigen::Index>(s.size()));
  Eigen::Index i = 0;
  for (float x : s) m(0, i++) = x;
  softmax_rows(m);
  return m;
}

}  // namespace

std::vector<DotVariance> explain_variance_table() { return dot_product_variance({4, 16, 64, 256}, 20000, 0); }

void check_explain_html(const std::string& path) {
  const std::string ext = files::lower_extension(path);
  if (ext != ".html" && ext != ".htm") throw Error(Subject{kPageRole, path}, "writes an HTML page; give a name ending in .html");
}

void write_explain_html(const std::string& path) {
  json examples = json::array();
  {  // (a)
    const Matrix q = matrix_from_rows({{1, 0}});
    const Matrix k = matrix_from_rows({{1, 0}, {0, 1}, {1, 1}});
    const Matrix v = k;
    const Matrix scores = q * k.transpose();
    const Attention a = scaled_dot_product_attention(q, k, v);
    examples.push_back(example("a", "(a) One query, three tokens, d_k = 2", q, k, v, false,
                               {printed("scores", scores, 3), printed("scaled", scores / std::sqrt(2.0f), 3),
                                printed("weights", a.weights, 3), printed("output", a.output, 3)}));
  }
  const Matrix qb = matrix_from_rows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}});
  const Matrix vb = matrix_from_rows({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}});
  {  // (b)
    const Matrix scores = qb * qb.transpose();
    const Attention a = scaled_dot_product_attention(qb, qb, vb);
    examples.push_back(example("b", "(b) Self-attention, 4 tokens, K = Q, d = 4 (√d = 2)", qb, qb, vb, false,
                               {printed("scores", scores, 0), printed("scaled", scores / 2.0f, 2),
                                printed("weights", a.weights, 4), printed("output", a.output, 3)}));
  }
  {  // (d)
    const Attention a = scaled_dot_product_attention(qb, qb, vb, causal_mask(qb.rows()));
    examples.push_back(example("d", "(d) Causal mask on example (b): token i sees only tokens 0..i", qb, qb, vb, true,
                               {printed("masked weights", a.weights, 4), printed("masked output", a.output, 3)}));
  }
  const json why_scale = {{"small", {{"scores", {2, 1, 0}}, {"weights", rows(softmax_of({2, 1, 0}))[0]}}},
                          {"large", {{"scores", {20, 10, 0}}, {"weights", rows(softmax_of({20, 10, 0}))[0]}}}};
  json variance = json::array();
  for (const DotVariance& row : explain_variance_table())
    variance.push_back({{"d_k", row.d_k}, {"var", row.var}, {"scaled_var", row.scaled_var}});
  const json data = {{"examples", std::move(examples)}, {"why_scale", why_scale}, {"variance", std::move(variance)}};
  report::write_explain_page(path, data.dump());
}

}  // namespace vitattn::cli
