#include "prompt_ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.hpp"
#include "parallel_for.hpp"

namespace vitattn {
namespace {

// Prompts per batch of encode_texts: enough rows for its products to be GEMMs rather than
// row-vector products, few enough that the batches keep every thread busy.
constexpr std::size_t kPromptsPerBatch = 64;

// Every prompt's (unit) embedding, in the order of the classes, then of their prompts: batches
// of encode_texts, in parallel over the batches. Each text's bytes are those of its encoding
// alone (text_tower.hpp), so neither the batching nor the thread count changes them.
Matrix prompt_embeddings(const TextTower& tower, const std::vector<const std::vector<std::int32_t>*>& prompts, int threads) {
  Matrix out(static_cast<Eigen::Index>(prompts.size()), tower.d_embed());
  const std::size_t n_batches = (prompts.size() + kPromptsPerBatch - 1) / kPromptsPerBatch;
  parallel_for(static_cast<int>(n_batches), threads, [&](int b) {
    const std::size_t first = static_cast<std::size_t>(b) * kPromptsPerBatch;
    const std::size_t last = std::min(prompts.size(), first + kPromptsPerBatch);
    std::vector<std::vector<std::int32_t>> batch;
    for (std::size_t p = first; p < last; ++p) batch.push_back(*prompts[p]);
    const std::vector<TextResult> encoded = encode_texts(tower, batch);
    for (std::size_t p = first; p < last; ++p) {
      const RowVector& e = encoded[p - first].embedding;
      out.row(static_cast<Eigen::Index>(p)) = e / e.norm();  // normalised already; the notebook normalises again: alike
    }
  });
  return out;
}

// The mean of rows [first, first + n) in double, normalised.
RowVector unit_mean(const Matrix& rows, Eigen::Index first, Eigen::Index n) {
  Eigen::Matrix<double, 1, Eigen::Dynamic> sum = Eigen::Matrix<double, 1, Eigen::Dynamic>::Zero(rows.cols());
  for (Eigen::Index i = first; i < first + n; ++i) sum += rows.row(i).cast<double>();
  sum /= static_cast<double>(n);
  const double norm = sum.norm();
  if (!(norm > 0.0) || !std::isfinite(norm)) throw Error("a class's prompts average to a zero embedding");
  return (sum / norm).cast<float>();
}

}  // namespace

Matrix prompt_ensemble(const TextTower& tower, const std::vector<std::vector<std::vector<std::int32_t>>>& prompt_ids,
                       int threads) {
  std::vector<const std::vector<std::int32_t>*> flat;
  for (std::size_t c = 0; c < prompt_ids.size(); ++c) {
    if (prompt_ids[c].empty()) throw Error("class " + std::to_string(c) + " has no prompt");
    for (const std::vector<std::int32_t>& ids : prompt_ids[c]) flat.push_back(&ids);
  }
  const Matrix each = prompt_embeddings(tower, flat, threads);
  Matrix out(static_cast<Eigen::Index>(prompt_ids.size()), tower.d_embed());
  Eigen::Index first = 0;
  for (std::size_t c = 0; c < prompt_ids.size(); ++c) {
    const auto n = static_cast<Eigen::Index>(prompt_ids[c].size());
    out.row(static_cast<Eigen::Index>(c)) = unit_mean(each, first, n);
    first += n;
  }
  return out;
}

}  // namespace vitattn
