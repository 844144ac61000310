#include "attention_maps.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "error.hpp"
#include "gemm.hpp"

namespace vitattn {

Matrix fuse_heads(const std::vector<Matrix>& heads, HeadFusion fusion) {
  if (heads.empty()) throw Error("fuse_heads: no heads");
  Matrix fused = heads.front();
  for (std::size_t h = 1; h < heads.size(); ++h) {
    switch (fusion) {
      case HeadFusion::mean: fused += heads[h]; break;
      case HeadFusion::max: fused = fused.cwiseMax(heads[h]); break;
      case HeadFusion::min: fused = fused.cwiseMin(heads[h]); break;
    }
  }
  if (fusion == HeadFusion::mean) fused /= static_cast<float>(heads.size());
  return fused;
}

void discard_weakest(Matrix& a, float discard_ratio) {
  const auto n = static_cast<std::size_t>(a.size());
  const auto n_drop = static_cast<std::size_t>(static_cast<double>(n) * static_cast<double>(discard_ratio));
  if (n_drop == 0) return;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  float* v = a.data();  // row-major: flat index = row·n_tokens + col
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_drop), order.end(),
                    [v](std::size_t i, std::size_t j) { return v[i] < v[j] || (v[i] == v[j] && i < j); });
  for (std::size_t k = 0; k < n_drop; ++k)
    if (order[k] != 0) v[order[k]] = 0.0f;
}

Matrix rollout_step(Matrix a, float discard_ratio) {
  const Eigen::Index n = a.rows();
  discard_weakest(a, discard_ratio);
  a = (a + Matrix::Identity(n, n)) * 0.5f;           // the residual connection
  a.array().colwise() /= a.rowwise().sum().array();  // rows sum to 1 again
  return a;
}

AttentionRollout::AttentionRollout(HeadFusion fusion, float discard_ratio)
    : fusion_(fusion), discard_ratio_(discard_ratio) {
  if (!(discard_ratio >= 0.0f && discard_ratio < 1.0f)) throw Error("attention_rollout: discard ratio must be in [0, 1)");
}

void AttentionRollout::add_layer(const std::vector<Matrix>& heads) {
  Matrix a = rollout_step(fuse_heads(heads, fusion_), discard_ratio_);  // (n_tokens, n_tokens)
  const Eigen::Index n = a.rows();
  if (rollout_.size() == 0) {
    rollout_ = std::move(a);
  } else {
    if (rollout_.rows() != n) throw Error("attention_rollout: layers have different token counts");
    // a (n_tokens, n_tokens) · rollout (n_tokens, n_tokens): later layers on the left
    Matrix product(n, n);
    gemm_ab(product, a, rollout_);
    rollout_ = std::move(product);
  }
}

Matrix class_token_map(const Matrix& attention, int first_patch, int grid_h, int grid_w) {
  return query_token_map(attention, 0, first_patch, grid_h, grid_w);
}

Matrix query_token_map(const Matrix& attention, int query, int first_patch, int grid_h, int grid_w) {
  if (attention.cols() != first_patch + Eigen::Index{grid_h} * grid_w)
    throw Error("class_token_map: " + std::to_string(attention.cols()) + " tokens do not hold " +
                std::to_string(first_patch) + " + " + std::to_string(grid_h) + "x" + std::to_string(grid_w));
  if (query < 0 || query >= attention.rows() || (query >= first_patch && first_patch > 0))
    throw Error("query_token_map: row " + std::to_string(query) + " is not a leading token (" +
                std::to_string(first_patch) + " of them)");
  Matrix map(grid_h, grid_w);
  for (int j = 0; j < grid_h * grid_w; ++j) map(j / grid_w, j % grid_w) = attention(query, first_patch + j);
  return map;
}

Matrix mass_mask(const Matrix& map, float fraction) {
  const auto n = static_cast<std::size_t>(map.size());
  const float* v = map.data();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [v](std::size_t i, std::size_t j) { return v[i] > v[j]; });
  const double total = map.cast<double>().sum();
  Matrix mask = Matrix::Zero(map.rows(), map.cols());
  double above = 0.0;  // mass of the patches already kept
  for (std::size_t k = 0; k < n && total > 0.0 && above < static_cast<double>(fraction) * total; ++k) {
    mask.data()[order[k]] = 1.0f;
    above += static_cast<double>(v[order[k]]);
  }
  return mask;
}

Matrix normalize_for_display(const Matrix& map) {
  const float lo = map.minCoeff();
  const float hi = map.maxCoeff();
  if (!(hi > lo)) return Matrix::Zero(map.rows(), map.cols());
  return (map.array() - lo) / (hi - lo);
}

}  // namespace vitattn
