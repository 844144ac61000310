#pragma once
// Standard output that cannot be written (/dev/full, a full disk under a redirection, a pod's
// log volume full) is an error of the run, not a loss nobody hears of: said once, on one
// error: line, and the run exits 1 (unless it already failed otherwise). Thread-safe.
#include <string>

namespace vitattn::cli {

// Standard output could not take what `what` wrote ("the log (--log-json -)"): says
// "standard output: cannot write <what>: <reason for error_number>" the first time only.
void standard_output_failed(const std::string& what, int error_number);

// True once standard_output_failed was called.
bool standard_output_has_failed();

// Flushes C's stdout and std::cout; a failure is said as above ("what" empty). Returns
// !standard_output_has_failed().
bool flush_standard_output();

}  // namespace vitattn::cli
