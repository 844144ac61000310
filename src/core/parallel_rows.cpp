#include "parallel_rows.hpp"

#include <algorithm>

#include "gemm.hpp"
#include "parallel_for.hpp"

namespace vitattn {
namespace {

using Index = Eigen::Index;

// Below this many elements a layer stays on one thread: a wake-up of the pool costs a few
// microseconds, about what one thread needs for this many exp or erf.
constexpr Index kSerialElements = Index{1} << 14;

}  // namespace

void parallel_rows(Index n_rows, Index row_cost, const std::function<void(Index, Index)>& rows) {
  parallel_row_blocks(n_rows, 1, row_cost, rows);
}

void parallel_row_blocks(Index n_rows, Index quantum, Index row_cost, const std::function<void(Index, Index)>& rows) {
  if (n_rows <= 0) return;
  const int threads = gemm_threads();
  quantum = std::max<Index>(quantum, 1);
  const Index n_blocks = (n_rows + quantum - 1) / quantum;
  if (threads <= 1 || n_blocks < 2 || n_rows * std::max<Index>(row_cost, 1) < kSerialElements) {
    rows(0, n_rows);
    return;
  }
  // Two ranges per thread: a thread that wakes late still finds work (which rows go to which
  // thread does not matter: a row's bytes do not depend on it).
  const int n_tasks = static_cast<int>(std::min<Index>(n_blocks, Index{2} * threads));
  parallel_for(n_tasks, threads, [&](int t) {
    const Index begin = std::min(n_rows, n_blocks * t / n_tasks * quantum);
    const Index end = std::min(n_rows, n_blocks * (t + 1) / n_tasks * quantum);
    if (begin < end) rows(begin, end);
  });
}

}  // namespace vitattn
