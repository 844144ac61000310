#include "prompt_ensemble.hpp"

#include <cmath>
#include <string>

#include "error.hpp"
#include "parallel_for.hpp"

namespace vitattn {
namespace {

// Every prompt's (unit) embedding, in the order of the classes, then of their prompts.
Matrix prompt_embeddings(const TextTower& tower, const std::vector<const std::vector<std::int32_t>*>& prompts, int threads) {
  Matrix out(static_cast<Eigen::Index>(prompts.size()), tower.d_embed());
  parallel_for(static_cast<int>(prompts.size()), threads, [&](int p) {
    const RowVector e = encode_text(tower, *prompts[static_cast<std::size_t>(p)]).embedding;
    out.row(p) = e / e.norm();  // encode_text normalises already; the notebook normalises again: alike
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
