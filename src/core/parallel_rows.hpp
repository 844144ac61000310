#pragma once
// Row-wise layers (layer norm, softmax, GELU) split over the same threads as the products.
// Rows are independent, so each row is computed by exactly one thread with the same code
// whatever the thread count: the results are the same bytes at 1, 2 or 7 threads.
#include <Eigen/Core>
#include <functional>

namespace vitattn {

// Calls rows(begin, end) over [0, n_rows) cut into contiguous ranges, on up to
// gemm_threads() threads (gemm.hpp). Small jobs (n_rows · row_cost under a threshold, where
// waking a thread costs more than it saves) run on the caller alone. row_cost is the work
// of one row in elements touched; it only picks serial or parallel, never the results.
void parallel_rows(Eigen::Index n_rows, Eigen::Index row_cost,
                   const std::function<void(Eigen::Index begin, Eigen::Index end)>& rows);

// The same with every range but the last a multiple of `quantum` rows: for steps whose rows go
// through products, whose register tiles a range cut mid-tile would leave partly empty.
void parallel_row_blocks(Eigen::Index n_rows, Eigen::Index quantum, Eigen::Index row_cost,
                         const std::function<void(Eigen::Index begin, Eigen::Index end)>& rows);

}  // namespace vitattn
