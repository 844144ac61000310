#pragma once
// Matrix types of the core. Row-major, because tokens are rows: row i of x is token i,
// which is also how safetensors and numpy lay the weights out.
#include <Eigen/Core>

namespace vitattn {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace vitattn
