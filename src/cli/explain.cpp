#include "explain.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "core/attention.hpp"
#include "core/error.hpp"
#include "explain_html.hpp"
#include "files/file_kind.hpp"
#include "pipeline/output_guard.hpp"
#include "files/text.hpp"
#include "image/image_writer.hpp"
#include "image/overlay.hpp"

namespace vitattn::cli {
namespace {

void print(std::ostream& out, const std::string& label, const Matrix& m, int precision = 4) {
  out << "  " << label << "  (" << m.rows() << "×" << m.cols() << ")\n";
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    out << "    [";
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      out << (j ? "  " : "") << std::setw(precision + 4) << std::fixed << std::setprecision(precision) << m(i, j);
    out << " ]\n";
  }
}

void heading(std::ostream& out, const char* text) { out << "\n" << text << "\n" << std::string(60, '-') << "\n"; }

// (a) One query against three keys, d_k = 2: small enough to do by hand.
void example_a(std::ostream& out) {
  heading(out, "(a) One query, three tokens, d_k = 2");
  const Matrix q = matrix_from_rows({{1, 0}});
  const Matrix k = matrix_from_rows({{1, 0}, {0, 1}, {1, 1}});
  const Matrix v = matrix_from_rows({{1, 0}, {0, 1}, {1, 1}});
  print(out, "q₁", q, 0);
  print(out, "K (one key per row)", k, 0);
  print(out, "V (one value per row)", v, 0);
  const Matrix scores = q * k.transpose();
  print(out, "scores = q₁·Kᵀ   (1·1+0·0, 1·0+0·1, 1·1+0·1)", scores, 3);
  Matrix scaled = scores / std::sqrt(2.0f);
  print(out, "scaled = scores / √2", scaled, 3);
  const Attention a = scaled_dot_product_attention(q, k, v);
  print(out, "weights = softmax(scaled) = e^s / Σe^s", a.weights, 3);
  const Eigen::ArrayXf e = scaled.row(0).transpose().array().exp();
  out << std::setprecision(3) << "  by hand: e^" << scaled(0, 0) << " = " << e(0) << ", e^" << scaled(0, 1) << " = "
      << e(1) << ", e^" << scaled(0, 2) << " = " << e(2) << "; sum = " << e.sum() << " → " << e(0) / e.sum() << ", "
      << e(1) / e.sum() << ", " << e(2) / e.sum() << "\n";
  print(out, "output = weights·V = 0.401·[1,0] + 0.198·[0,1] + 0.401·[1,1]", a.output, 3);
}

Matrix example_b_q() { return matrix_from_rows({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}}); }
Matrix example_b_v() { return matrix_from_rows({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}}); }

// (b) Self-attention over four tokens with K = Q.
Matrix example_b(std::ostream& out) {
  heading(out, "(b) Self-attention, 4 tokens, K = Q, d = 4 (√d = 2)");
  const Matrix q = example_b_q();
  const Matrix v = example_b_v();
  print(out, "Q = K", q, 0);
  print(out, "V", v, 0);
  const Matrix scores = q * q.transpose();
  print(out, "scores = Q·Kᵀ", scores, 0);
  print(out, "scaled = scores / 2", scores / 2.0f, 2);
  const Attention a = scaled_dot_product_attention(q, q, v);
  print(out, "weights = softmax(scaled), row by row", a.weights);
  out << "  Each token matches itself best (a key equal to the query), so the diagonal is brightest.\n";
  const float worst = (a.weights.rowwise().sum().array() - 1.0f).abs().maxCoeff();
  out << "  every row sums to 1: largest |row sum − 1| = " << std::scientific << std::setprecision(2) << worst
      << std::fixed << "\n";
  print(out, "output = weights·V  (each row a weighted average of V's rows)", a.output, 3);
  return a.weights;
}

float softmax_print(std::ostream& out, const std::vector<float>& s) {
  Matrix m(1, static_cast<Eigen::Index>(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i) m(0, static_cast<Eigen::Index>(i)) = s[i];
  softmax_rows(m);
  out << "  softmax([";
  for (std::size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << std::setprecision(0) << s[i];
  out << "]) = [";
  for (Eigen::Index i = 0; i < m.cols(); ++i) out << (i ? ", " : "") << std::setprecision(10) << std::defaultfloat << m(0, i);
  out << "]\n" << std::fixed;
  return m(0, 0);
}

// (c) Why divide by √d_k.
void example_c(std::ostream& out) {
  heading(out, "(c) Why scale by 1/√d_k");
  softmax_print(out, {2, 1, 0});
  softmax_print(out, {20, 10, 0});
  out << "  Scores ten times larger push softmax to one-hot: the winner takes everything and the\n"
         "  gradient of every other token vanishes.\n\n"
         "  If q and k have d_k independent components of mean 0 and variance 1, q·k is a sum of\n"
         "  d_k terms of variance 1, so Var(q·k) = d_k and its spread grows like √d_k. Dividing by\n"
         "  √d_k brings the variance back to 1 whatever the head width. Checked on random vectors\n"
         "  (20000 pairs each, components uniform with variance 1, seed 0):\n";
  out << "    d_k    Var(q·k)   Var(q·k/√d_k)\n";
  for (const DotVariance& row : explain_variance_table())
    out << "    " << std::setw(4) << row.d_k << "   " << std::setw(8) << std::setprecision(2) << row.var << "   "
        << std::setw(8) << row.scaled_var << "\n";
}

// (d) The causal mask on example (b).
void example_d(std::ostream& out) {
  heading(out, "(d) Causal mask on example (b): token i sees only tokens 0..i");
  const Matrix q = example_b_q();
  const Matrix mask = causal_mask(q.rows());
  out << "  M: 0 on and below the diagonal, −∞ above; weights = softmax(Q·Kᵀ/√d + M)\n";
  const Attention a = scaled_dot_product_attention(q, q, example_b_v(), mask);
  print(out, "masked weights", a.weights);
  float above = 0;
  for (Eigen::Index i = 0; i < a.weights.rows(); ++i)
    for (Eigen::Index j = i + 1; j < a.weights.cols(); ++j) above = std::max(above, std::abs(a.weights(i, j)));
  out << "  largest weight above the diagonal: " << std::defaultfloat << above << std::fixed
      << " (exactly 0: e^−∞ = 0); the first token can only attend to itself, so its row is [1 0 0 0].\n";
  print(out, "masked output", a.output, 3);
  out << "  The same mask runs in CLIP's text tower: vitattn --model CLIP --text \"a photo of a cat\" --report IMAGE\n"
         "  draws its attention token × token, the masked cells shown as masked (docs/text.md).\n";
}

}  // namespace

int explain(std::ostream& out, const std::string& heatmap_png, const std::string& html) {
  // Before any output: each is written whole, over a file of its own kind only, and the two are
  // two files (pipeline::OutputGuard).
  if (!html.empty()) check_explain_html(html);
  if (!heatmap_png.empty() && files::lower_extension(heatmap_png) != image::extension(image::ImageFormat::png))
    throw Error(Subject{kHeatmapRole, heatmap_png}, "writes a PNG image; give a name ending in .png");
  pipeline::OutputGuard guard;
  if (!heatmap_png.empty()) guard.writes(heatmap_png, kHeatmapRole, files::FileKind::png);
  if (!html.empty()) guard.writes(html, kPageRole, files::FileKind::vitattn_page);
  out << "Attention, step by step: weights = softmax(Q·Kᵀ / √d_k), output = weights·V\n";
  example_a(out);
  const Matrix weights_b = example_b(out);
  example_c(out);
  example_d(out);
  if (!heatmap_png.empty()) {
    image::write_image_atomic(heatmap_png, image::render_heatmap(weights_b, 64, cv::COLORMAP_VIRIDIS));
    out << "\nWrote example (b)'s weights as a heatmap: " << heatmap_png << "\n";
  }
  if (!html.empty()) {
    write_explain_html(html);
    out << "\nWrote the examples as a page: " << html << "\n";
  }
  return 0;
}

}  // namespace vitattn::cli
