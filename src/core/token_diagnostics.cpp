#include "token_diagnostics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attention_maps.hpp"
#include "attention_stats.hpp"
#include "error.hpp"

namespace vitattn {

RowVector token_norms(const Matrix& x) {
  RowVector norms(x.rows());  // (n_tokens)
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double sum = 0.0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) sum += static_cast<double>(x(i, j)) * static_cast<double>(x(i, j));
    norms(i) = static_cast<float>(std::sqrt(sum));
  }
  return norms;
}

float median_patch_norm(const RowVector& norms, int first_patch) {
  if (first_patch < 0 || first_patch >= norms.size())
    throw Error("median_patch_norm: no patch tokens among " + std::to_string(norms.size()) + " tokens");
  std::vector<float> patches(norms.data() + first_patch, norms.data() + norms.size());
  const std::size_t mid = patches.size() / 2;
  std::nth_element(patches.begin(), patches.begin() + static_cast<std::ptrdiff_t>(mid), patches.end());
  const float upper = patches[mid];
  if (patches.size() % 2 == 1) return upper;
  const float lower = *std::max_element(patches.begin(), patches.begin() + static_cast<std::ptrdiff_t>(mid));
  return static_cast<float>((static_cast<double>(lower) + static_cast<double>(upper)) / 2.0);
}

std::vector<int> artifact_tokens(const RowVector& norms, int first_patch, float ratio) {
  if (!(ratio > 0.0f) || !std::isfinite(ratio))
    throw Error("artifact_tokens: the ratio must be a finite number above 0, not " + std::to_string(ratio));
  const double limit = static_cast<double>(ratio) * static_cast<double>(median_patch_norm(norms, first_patch));
  std::vector<int> flagged;
  for (Eigen::Index j = first_patch; j < norms.size(); ++j)
    if (static_cast<double>(norms(j)) > limit) flagged.push_back(static_cast<int>(j));
  return flagged;
}

RowVector sink_scores(const std::vector<Matrix>& heads) {
  if (heads.empty()) throw Error("sink_scores: no heads");
  Eigen::Matrix<double, 1, Eigen::Dynamic> sum = Eigen::Matrix<double, 1, Eigen::Dynamic>::Zero(heads.front().cols());
  for (const Matrix& a : heads) sum += a.cast<double>().colwise().sum();  // (n_tokens) column sums
  const double n = static_cast<double>(heads.size()) * static_cast<double>(heads.front().rows());
  return (sum / n).cast<float>();
}

double class_attention_share(const std::vector<Matrix>& heads, const std::vector<int>& tokens) {
  if (heads.empty()) return 0.0;
  double total = 0.0;
  for (const Matrix& a : heads)
    for (int j : tokens) total += static_cast<double>(a(0, j));
  return total / static_cast<double>(heads.size());
}

Matrix without_tokens(const Matrix& map, const std::vector<int>& flagged, int first_patch) {
  Matrix clean = map;  // (grid_h, grid_w), row-major: cell = token − first_patch
  double before = 0.0;
  for (Eigen::Index i = 0; i < map.size(); ++i) before += static_cast<double>(map.data()[i]);
  for (int token : flagged) {
    const int cell = token - first_patch;
    if (cell < 0 || cell >= clean.size())
      throw Error("without_tokens: token " + std::to_string(token) + " is not a patch of a " +
                  std::to_string(map.rows()) + "x" + std::to_string(map.cols()) + " grid");
    clean.data()[cell] = 0.0f;
  }
  double after = 0.0;
  for (Eigen::Index i = 0; i < clean.size(); ++i) after += static_cast<double>(clean.data()[i]);
  if (after > 0.0 && before > 0.0) clean *= static_cast<float>(before / after);
  return clean;
}

TokenRecorder::TokenRecorder(const TokenShape& shape, float artifact_ratio, float threshold)
    : shape_(shape),
      ratio_(artifact_ratio),
      threshold_(threshold),
      distances_(patch_distances(shape.grid_h, shape.grid_w, shape.patch_size)),
      norms_(Matrix::Zero(shape.layers, shape.tokens())),
      sinks_(Matrix::Zero(shape.layers, shape.tokens())),
      class_rows_(static_cast<std::size_t>(shape.layers)),
      distance_(static_cast<std::size_t>(shape.layers)),
      heard_attention_(static_cast<std::size_t>(shape.layers), false),
      heard_output_(static_cast<std::size_t>(shape.layers), false) {
  if (!(artifact_ratio > 0.0f) || !std::isfinite(artifact_ratio))
    throw Error("TokenRecorder: the artifact ratio must be a finite number above 0");
  if (!(threshold > 0.0f && threshold <= 1.0f)) throw Error("TokenRecorder: the mask threshold must be in (0, 1]");
}

namespace {
void require_layer(int layer, int layers) {
  if (layer < 0 || layer >= layers)
    throw Error("TokenRecorder: layer " + std::to_string(layer) + " of a model of " + std::to_string(layers));
}
}  // namespace

void TokenRecorder::add_attention(int layer, const std::vector<Matrix>& heads) {
  require_layer(layer, shape_.layers);
  const auto l = static_cast<std::size_t>(layer);
  // No head read before the count is known right: an empty list has no front().
  const bool square = std::all_of(heads.begin(), heads.end(), [&](const Matrix& a) {
    return a.rows() == shape_.tokens() && a.cols() == shape_.tokens();
  });
  if (static_cast<int>(heads.size()) != shape_.heads || !square)
    throw Error("TokenRecorder: layer " + std::to_string(layer) + " has " + std::to_string(heads.size()) +
                " heads" + (heads.empty() ? "" : " of " + std::to_string(heads.front().rows()) + "x" +
                                                     std::to_string(heads.front().cols()) + " tokens") +
                ", expected " + std::to_string(shape_.heads) + " of " + std::to_string(shape_.tokens()));
  sinks_.row(layer) = sink_scores(heads);
  Matrix rows(shape_.heads, shape_.tokens());  // (heads, n_tokens) each head's class-token row
  distance_[l].clear();
  for (int h = 0; h < shape_.heads; ++h) {
    // No leading token (SigLIP, whose probe reads only the last layer): the mean query's row,
    // what an average token attends to, in double so the sum's order does not matter.
    const Matrix& a = heads[static_cast<std::size_t>(h)];
    rows.row(h) = shape_.first_patch > 0 ? RowVector(a.row(0))
                                         : RowVector((a.cast<double>().colwise().sum() / static_cast<double>(a.rows())).cast<float>());
    distance_[l].push_back(mean_attention_distance(heads[static_cast<std::size_t>(h)], shape_.first_patch, distances_));
  }
  class_rows_[l] = std::move(rows);
  heard_attention_[l] = true;
}

void TokenRecorder::add_block_output(int layer, const Matrix& x) {
  require_layer(layer, shape_.layers);
  if (x.rows() != shape_.tokens())
    throw Error("TokenRecorder: layer " + std::to_string(layer) + "'s output has " + std::to_string(x.rows()) +
                " tokens, expected " + std::to_string(shape_.tokens()));
  norms_.row(layer) = token_norms(x);
  heard_output_[static_cast<std::size_t>(layer)] = true;
}

namespace {
// The entropy −Σ p ln p of one attention row (sums to 1), in nats.
double row_entropy(const Matrix& rows, int r) {
  double h = 0.0;
  for (Eigen::Index j = 0; j < rows.cols(); ++j) {
    const double p = static_cast<double>(rows(r, j));
    if (p > 0.0) h -= p * std::log(p);
  }
  return h;
}
}  // namespace

TokenDiagnostics TokenRecorder::finish() const {
  TokenDiagnostics d;
  d.shape = shape_;
  d.artifact_ratio = ratio_;
  d.norms = norms_;
  d.sinks = sinks_;
  d.median_norm = RowVector::Zero(shape_.layers);
  d.register_share = RowVector::Zero(shape_.layers);
  std::vector<int> registers;
  for (int r = shape_.first_register; r < shape_.first_patch; ++r) registers.push_back(r);
  const int n_cells = shape_.grid_h * shape_.grid_w;
  for (int l = 0; l < shape_.layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    if (!heard_attention_[li] || !heard_output_[li])
      throw Error("TokenRecorder: layer " + std::to_string(l) + " was not heard");
    const RowVector norms = norms_.row(l);
    d.median_norm(l) = median_patch_norm(norms, shape_.first_patch);
    d.flagged.push_back(artifact_tokens(norms, shape_.first_patch, ratio_));
    const Matrix& rows = class_rows_[li];  // (heads, n_tokens)
    std::vector<HeadStats> stats;
    double share = 0.0;
    for (int h = 0; h < shape_.heads; ++h) {
      HeadStats s;
      s.entropy = row_entropy(rows, h);
      s.distance_px = distance_[li][static_cast<std::size_t>(h)];
      // The class token's row over the patches, laid on the grid (class_token_map's layout).
      Matrix map(shape_.grid_h, shape_.grid_w);
      for (int c = 0; c < n_cells; ++c) map.data()[c] = rows(h, shape_.first_patch + c);
      const Matrix mask = mass_mask(map, threshold_);
      s.mask_share = static_cast<double>(mask.sum()) / static_cast<double>(n_cells);
      for (int j : d.flagged.back()) s.flagged_share += static_cast<double>(rows(h, j));
      for (int j : registers) share += static_cast<double>(rows(h, j));
      stats.push_back(s);
    }
    d.register_share(l) = static_cast<float>(share / static_cast<double>(shape_.heads));
    d.heads.push_back(std::move(stats));
  }
  return d;
}

}  // namespace vitattn
