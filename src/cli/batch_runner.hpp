#pragma once
// Runs one function over many jobs on a few worker threads. A job that throws is counted
// and reported; it never stops the others.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/batch_plan.hpp"
#include "progress.hpp"

namespace vitattn::cli {

struct BatchResult {
  std::size_t written = 0;
  std::size_t failed = 0;
  std::size_t not_started = 0;  // left when `stop` said so
};

// `stop`, when given, is asked before each job is taken: once it returns true no new job
// starts, and the jobs in hand are finished. `done`, when given, is told each job's end on
// its worker: the error line (empty when it went well) and the wall time in milliseconds.
using JobDone = std::function<void(const pipeline::InputJob&, const std::string& error, double ms)>;
BatchResult run_batch(const std::vector<pipeline::InputJob>& jobs, int workers,
                      const std::function<void(const pipeline::InputJob&)>& work, Progress& progress,
                      const std::function<bool()>& stop = {}, const JobDone& done = {});

// What --skip-existing found: inputs passed over, and inputs drawn again although their outputs
// were there (made with other settings, pipeline/job_record.hpp).
struct SkipCounts {
  std::size_t skipped = 0;
  std::size_t redone = 0;
};

// The closing line: "<n> images in <t> s: <w> written to <out>[, <f> failed][, <s> skipped
// (already done)][, <r> redone (made with other settings)]", or, after a signal, "interrupted
// by SIGINT after <t> s: <w> of <n> images written to <out>, <f> failed, <k> not started[, …
// skipped …][, … redone …]". `total` counts the skipped inputs too, and `videos` of them are
// videos ("2 images and 1 video"); the redone ones are among the written or failed.
std::string batch_summary(std::size_t total, std::size_t videos, SkipCounts skips, const BatchResult& result,
                          double seconds, const std::string& out, int signal);

}  // namespace vitattn::cli
