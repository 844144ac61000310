#pragma once
// Matrix types of the core. Row-major, because tokens are rows: row i of x is token i,
// which is also how safetensors and numpy lay the weights out.
#include <Eigen/Core>
#include <initializer_list>

namespace vitattn {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;

// A row-major block of a Matrix, or a WeightMatrix (rows may be strided: q, k and v are column
// ranges of qkv); binding one never copies.
using MatrixView = Eigen::Ref<Matrix, 0, Eigen::OuterStride<>>;
using ConstMatrixView = Eigen::Ref<const Matrix, 0, Eigen::OuterStride<>>;

// A small matrix written out row by row, as in the worked examples: {{1, 0}, {0, 1}}.
inline Matrix matrix_from_rows(std::initializer_list<std::initializer_list<float>> rows) {
  Matrix m(static_cast<Eigen::Index>(rows.size()), rows.size() ? static_cast<Eigen::Index>(rows.begin()->size()) : 0);
  Eigen::Index i = 0;
  for (const auto& row : rows) {
    Eigen::Index j = 0;
    for (float v : row) m(i, j++) = v;
    ++i;
  }
  return m;
}

}  // namespace vitattn
