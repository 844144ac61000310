#pragma once
// Runs one function over many jobs on a few worker threads. A job that throws is counted
// and its error line handed on; it never stops the others.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "batch_plan.hpp"

namespace vitattn::pipeline {

struct BatchCounts {
  std::size_t written = 0;
  std::size_t failed = 0;
  std::size_t not_started = 0;  // left when `stop` said so
};

// `stop`, when given, is asked before each job is taken: once it returns true no new job
// starts, and the jobs in hand are finished. `done`, when given, is told each job's end on
// its worker: the error line (empty when it went well: an Error's text, which names the file,
// else "<input>: <what>") and the wall time in milliseconds.
using JobWork = std::function<void(const InputJob&)>;
using JobDone = std::function<void(const InputJob&, const std::string& error, double ms)>;
BatchCounts run_on_workers(const std::vector<InputJob>& jobs, int workers, const JobWork& work,
                           const std::function<bool()>& stop = {}, const JobDone& done = {});

}  // namespace vitattn::pipeline
