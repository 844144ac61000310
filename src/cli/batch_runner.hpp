#pragma once
// Runs one function over many jobs on a few worker threads. A job that throws is counted
// and reported; it never stops the others.
#include <cstddef>
#include <functional>
#include <vector>

#include "io/batch_plan.hpp"
#include "progress.hpp"

namespace vitattn::cli {

struct BatchResult {
  std::size_t written = 0;
  std::size_t failed = 0;
};

BatchResult run_batch(const std::vector<io::ImageJob>& jobs, int workers,
                      const std::function<void(const io::ImageJob&)>& work, Progress& progress);

}  // namespace vitattn::cli
