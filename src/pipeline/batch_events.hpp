#pragma once
// What a batch (run_batch.hpp) tells its front end as it goes, and the roles its messages name.
// Nothing below the CLI logs, reads the environment or names a flag: a message names a role,
// which BatchEvents::name_of turns into the front end's word for it ("--pca-fit").
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "batch_plan.hpp"
#include "job_outputs.hpp"
#include "predictions.hpp"

namespace vitattn::pipeline {

namespace roles {
inline constexpr const char* recursive = "descending into folders";
inline constexpr const char* shard = "the shard";
inline constexpr const char* skip_existing = "skipping what is done";
inline constexpr const char* report = "the report";
inline constexpr const char* top = "the top classes";
inline constexpr const char* faithfulness_scores = "the faithfulness scores";
inline constexpr const char* pca = "the PCA picture";
inline constexpr const char* pca_fit = "the PCA fit";
}  // namespace roles

// What a batch tells its front end as it goes. Every method has an empty default; job_*,
// frame_*, warning and top_classes are called from the workers, concurrently.
class BatchEvents {
 public:
  enum class Level { debug, info, warn, error };
  virtual ~BatchEvents() = default;
  // The front end's name for a role (a value of the request: "the PCA fit"), in messages;
  // none: the role's own words.
  virtual std::optional<std::string> name_of(const std::string& role) const;
  // A line about the batch: planning notes, warnings and errors, the PCA fit, the files written.
  virtual void message(Level, const std::string&) {}
  // The guard passed: nothing is written yet. A front end opens its own files here (a throw
  // stops the run before anything is written).
  virtual void checked(const OutputSet&) {}
  // skip_existing left these out: their outputs are there.
  virtual void already_done(const std::vector<InputJob>&) {}
  // The jobs are about to start on `workers` workers.
  virtual void jobs_starting(const std::vector<InputJob>&, int /*workers*/) {}
  virtual void job_started(const InputJob&) {}
  virtual void job_finished(const InputJob&, const std::string& /*error: empty when it went well*/, double /*ms*/) {}
  virtual void frames_expected(std::size_t) {}  // a video's frames to come
  virtual void frame_done() {}                  // one more video frame written
  virtual void warning(const std::string&) {}   // about one job's input or output ("PATH: …")
  virtual void top_classes(const InputJob&, std::vector<ClassScore>) {}  // with process.top
  virtual void jobs_done() {}                   // every started job has finished
  // The batch files written (their paths), and one line per file not written or part left out.
  virtual void batch_files_written(const std::vector<std::filesystem::path>& /*written*/,
                                   const std::vector<std::string>& /*errors*/) {}
  // Asked before each job, and each video frame: true stops the batch (the jobs in hand finish).
  virtual bool should_stop() { return false; }

  // name_of(role), else the role.
  std::string named(const std::string& role) const;
};

}  // namespace vitattn::pipeline
