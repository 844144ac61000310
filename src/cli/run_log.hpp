#pragma once
// --log-json FILE: one JSON line per input, written as the input finishes, so that a run cut
// short (a killed array task, a node lost) still leaves a valid log of what it did:
//   {"path":"photos/cat.jpg","status":"ok","error":null,"outputs":["out/cat_attn.png"],"ms":412}
// status: "ok" (outputs written), "failed" (error says why, as on stderr), "skipped"
// (--skip-existing found its outputs: they are listed; or the run was interrupted before it
// started: error says so). ms: wall time of the input in milliseconds (0 when skipped).
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "pipeline/batch_plan.hpp"
#include "pipeline/job_outputs.hpp"

namespace vitattn::cli {

enum class RunStatus { ok, failed, skipped };

// One log line, '\n' included. Bytes of `path`, `error` or `outputs` that are not UTF-8 become
// U+FFFD (JSON holds text only).
std::string log_line(const std::filesystem::path& path, RunStatus status, const std::string& error,
                     const std::vector<std::filesystem::path>& outputs, std::int64_t ms);

class RunLog {
 public:
  // Creates or empties `path` ("-": standard output). Throws Error naming it.
  RunLog(const std::string& path, pipeline::OutputSet outputs);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // One line for `job`, written whole with one write(2) before returning: another process
  // reading the file, or this one dying next, never sees part of it. Thread-safe.
  // `error` empty means ok.
  void finished(const pipeline::InputJob& job, const std::string& error, double ms);
  // True once a line could not be written: said once, when it happened, and no line is
  // written after it (a log with a line missing in its middle would mislead a reader).
  bool failed() const;
  // Closes the file (a network file system may report a failed write only then). Returns
  // !failed(), said once as above.
  bool close();
  // --skip-existing left these out: their outputs are there.
  void already_done(const std::vector<pipeline::InputJob>& jobs);
  // The run stopped before the last `n` of `jobs` started (pipeline::run_on_workers claims jobs in order);
  // `reason`: why ("the run was interrupted by SIGTERM").
  void not_started(const std::vector<pipeline::InputJob>& jobs, std::size_t n, const std::string& reason);

 private:
  void write(const std::string& line);
  void fail(int error_number);  // with mutex_ held
  std::string path_;
  int fd_;
  bool owned_;
  bool failed_ = false;
  pipeline::OutputSet outputs_;
  mutable std::mutex mutex_;
};

}  // namespace vitattn::cli
