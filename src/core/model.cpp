#include "model.hpp"

#include <cmath>
#include <string>

#include "attention.hpp"
#include "error.hpp"
#include "gemm.hpp"

namespace vitattn {
namespace {

std::string shape_str(Eigen::Index rows, Eigen::Index cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void expect_shape(const std::string& source, const char* name, const Matrix& m, Eigen::Index rows,
                  Eigen::Index cols) {
  if (m.rows() != rows || m.cols() != cols)
    throw Error(source + ": " + name + " is " + shape_str(m.rows(), m.cols()) + ", expected " +
                shape_str(rows, cols));
  if (!m.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
}

void expect_shape(const std::string& source, const char* name, const RowVector& v, Eigen::Index cols) {
  if (v.cols() != cols)
    throw Error(source + ": " + name + " is [" + std::to_string(v.cols()) + "], expected [" +
                std::to_string(cols) + "]");
  if (!v.allFinite()) throw Error(source + ": " + name + " holds a non-finite value (NaN or inf)");
}

// softmax(s·q·kᵀ)·v as attention.cpp spells it out for `explain`, with the products in gemm
// so that the maps have the same bytes whatever the thread count (gemm.hpp).
Attention head_attention(const Matrix& q, const Matrix& k, const Matrix& v, bool scale) {
  const float s = scale ? 1.0f / std::sqrt(static_cast<float>(q.cols())) : 1.0f;
  Attention a;
  a.weights.resize(q.rows(), k.rows());
  // s·q (n_tokens, d_k) · kᵀ (d_k, n_tokens) → scores (n_tokens, n_tokens)
  gemm_abt(a.weights, q, k, s);
  softmax_rows(a.weights);
  // weights (n_tokens, n_tokens) · v (n_tokens, d_k) → output (n_tokens, d_k)
  a.output.resize(q.rows(), v.cols());
  gemm_ab(a.output, a.weights, v);
  return a;
}

}  // namespace

int SingleHeadModel::grid_size() const {
  const int n = n_patches();
  int g = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n > 0 ? n : 0))));
  return g * g == n ? g : -1;
}

void SingleHeadModel::validate(const std::string& source) const {
  if (patch_size <= 0) throw Error(source + ": patch size must be positive");
  const Eigen::Index d = w_patch.rows();
  const Eigen::Index patch_dim = 3 * patch_size * patch_size;
  if (d <= 0) throw Error(source + ": d_model must be positive");
  expect_shape(source, "patch_embed.proj.weight", w_patch, d, patch_dim);
  expect_shape(source, "patch_embed.proj.bias", b_patch, d);
  expect_shape(source, "cls_token", cls_token, d);
  if (pos_embed.rows() < 2 || grid_size() <= 0)
    throw Error(source + ": pos_embed has " + std::to_string(pos_embed.rows()) +
                " rows; expected 1 + n_patches with n_patches a square number");
  expect_shape(source, "pos_embed", pos_embed, pos_embed.rows(), d);
  const Eigen::Index d_k_ = w_q.rows();
  if (d_k_ <= 0) throw Error(source + ": attn.q.weight has no rows (d_k = 0)");
  expect_shape(source, "attn.q.weight", w_q, d_k_, d);
  expect_shape(source, "attn.k.weight", w_k, d_k_, d);
  expect_shape(source, "attn.v.weight", w_v, d_k_, d);
  expect_shape(source, "attn.q.bias", b_q, d_k_);
  expect_shape(source, "attn.k.bias", b_k, d_k_);
  expect_shape(source, "attn.v.bias", b_v, d_k_);
  for (int c = 0; c < 3; ++c)
    if (!std::isfinite(norm.mean[static_cast<std::size_t>(c)]) ||
        !(norm.std[static_cast<std::size_t>(c)] > 0.0f) || !std::isfinite(norm.std[static_cast<std::size_t>(c)]))
      throw Error(source + ": mean must be finite and std finite and positive");
}

Matrix patchify(const ImageTensor& image, int patch_size) {
  if (patch_size <= 0 || image.height % patch_size != 0 || image.width % patch_size != 0)
    throw Error("patchify: image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                " is not a whole number of " + std::to_string(patch_size) + "-pixel patches");
  const int grid_h = image.height / patch_size;
  const int grid_w = image.width / patch_size;
  const int p = patch_size;
  Matrix patches(grid_h * grid_w, 3 * p * p);
  for (int gy = 0; gy < grid_h; ++gy)
    for (int gx = 0; gx < grid_w; ++gx) {
      const int row = gy * grid_w + gx;  // raster order: top row of patches first
      int col = 0;
      for (int c = 0; c < 3; ++c)  // (channel, y, x): the layout of a Conv2d weight
        for (int y = 0; y < p; ++y)
          for (int x = 0; x < p; ++x) patches(row, col++) = image.at(c, gy * p + y, gx * p + x);
    }
  return patches;
}

Matrix embed_tokens(const SingleHeadModel& model, const Matrix& patches) {
  const Eigen::Index n_patches = patches.rows();
  if (n_patches + 1 != model.pos_embed.rows())
    throw Error("embed_tokens: " + std::to_string(n_patches) + " patches but pos_embed has " +
                std::to_string(model.pos_embed.rows()) + " rows");
  Matrix x(n_patches + 1, model.d_model());
  // b_patch + patches (n_patches, 3·P·P) · w_patchᵀ (3·P·P, d_model) → (n_patches, d_model)
  x.bottomRows(n_patches).rowwise() = model.b_patch;
  gemm_abt(x.bottomRows(n_patches), patches, model.w_patch, 1.0f, Accumulate::yes);
  x.row(0) = model.cls_token;
  // x (1 + n_patches, d_model) += pos_embed (1 + n_patches, d_model)
  x += model.pos_embed;
  return x;
}

Matrix cls_row_to_grid(const Matrix& weights, int grid_size) {
  Matrix grid(grid_size, grid_size);
  for (int j = 0; j < grid_size * grid_size; ++j) grid(j / grid_size, j % grid_size) = weights(0, 1 + j);
  return grid;
}

AttentionMaps run_single_head(const SingleHeadModel& model, const ImageTensor& image, bool scale) {
  if (image.height != model.img_size() || image.width != model.img_size())
    throw Error("run_single_head: image is " + std::to_string(image.width) + "x" +
                std::to_string(image.height) + ", the model takes " + std::to_string(model.img_size()) +
                "x" + std::to_string(model.img_size()));
  const Matrix patches = patchify(image, model.patch_size);  // (n_patches, 3·P·P)
  const Matrix x = embed_tokens(model, patches);             // (n_tokens, d_model)
  const Matrix q = linear(x, model.w_q, model.b_q);          // (n_tokens, d_k)
  const Matrix k = linear(x, model.w_k, model.b_k);          // (n_tokens, d_k)
  const Matrix v = linear(x, model.w_v, model.b_v);          // (n_tokens, d_k)
  Attention a = head_attention(q, k, v, scale);
  AttentionMaps maps;
  maps.cls_map = cls_row_to_grid(a.weights, model.grid_size());  // (grid, grid)
  maps.weights = std::move(a.weights);
  maps.output = std::move(a.output);
  return maps;
}

Matrix normalize_for_display(const Matrix& map) {
  const float lo = map.minCoeff();
  const float hi = map.maxCoeff();
  if (!(hi > lo)) return Matrix::Zero(map.rows(), map.cols());
  return (map.array() - lo) / (hi - lo);
}

}  // namespace vitattn
