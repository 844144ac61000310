#pragma once
// Which files a run reads and where each one's outputs go.
#include <filesystem>
#include <string>
#include <vector>

#include "core/shard.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

struct InputJob {
  std::filesystem::path input;
  // Output path without its suffix: "<out>/<sub-folder>/<stem>"; the outputs are
  // output_paths(output_base, …) (job_outputs.hpp).
  std::filesystem::path output_base;
  // The input's path relative to the folder it was found in, or as named (lexically
  // normal): what --shard hashes, so that adding files does not move the others.
  std::filesystem::path root_relative = {};
  bool video = false;  // a video by its extension (video::has_video_extension): process_video.hpp
};

struct BatchPlan {
  std::vector<InputJob> jobs;
  std::vector<std::string> renamed;  // notes on stem collisions and how they were resolved
  std::vector<std::string> errors;   // folders that could not be listed, one line each
  // "PATH: skipped, why", one line each. warnings: image-like entries dropped (a FIFO named
  // x.jpg, a refused format, a second name for a file already in the batch, a symlinked
  // folder under -r). skipped: the rest (other files, folders without -r), for -v.
  std::vector<std::string> warnings;
  std::vector<std::string> skipped;
  // Sub-folders passed over because the walk is not recursive (a caller may say how to ask for it).
  std::size_t folders_not_walked = 0;
  // Files found in folders and left out as vitattn's outputs (named like one, in the output tree).
  std::vector<std::filesystem::path> own_outputs;
};

// Files named directly are always jobs (even without an image extension: the decoder
// then says what is wrong). Folders contribute their regular files with a readable image
// extension or a video extension, sorted, descending into sub-folders only when `recursive`; the output folder itself is never walked, nor are
// symlinked folders followed (no loops); a broken symlink with an image name is a job, so
// that it gets its error. Every output lies below `out_dir`: it is named from the input's
// stem and, in a walk, the sub-folder the input was found in (an input whose output would
// not, which should not happen, becomes an error instead of a job). Two inputs never share an output: colliding stems
// in one output folder become "<stem>_<ext>", and any collision left after that gets "-2",
// "-3", … in input order. A file found in a folder that lies in the output tree and is named
// like an output (is_output_name) is an earlier run's output: it is left out (own_outputs), so
// that running the same command twice leaves the same files as running it once. A file
// reached by several names (named twice, a symlink beside it) is one job, under the name that
// is no symlink, else the first; each other name is a warning. An input
// named on the command line that is where an output goes is not refused here: the caller
// hands the plan to an OutputGuard (output_guard.hpp), with the run's other files. Every
// other entry passed over gets a line in `warnings` or `skipped`.
BatchPlan plan_batch(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& out_dir,
                     bool recursive, const OutputSet& outputs = {});

std::filesystem::path with_suffix(const std::filesystem::path& base, const char* suffix);

// True when the job is done (job_record.hpp): every output of `job` is there as a regular file
// (a symlink does not count), its settings record last, and the record holds this run's
// settings. Outputs are written whole (temporary file, then rename) and the record after them,
// so a job whose record is there and right is complete.
bool job_finished(const InputJob& job, const OutputSet& outputs);

// --skip-existing: removes the jobs that are done (job_finished) and returns how many, with
// the jobs it keeps although their outputs are all there: made with other settings, or with no
// record of them (job_record.hpp's stale), so they are drawn again.
struct FinishedJobs {
  std::size_t done = 0;
  std::vector<InputJob> redone = {};
};
FinishedJobs drop_finished_jobs(BatchPlan& plan, const OutputSet& outputs);

// Keeps the jobs of `shard` (by InputJob::root_relative, core/shard.hpp); returns how many
// were left to the other shards. After plan_batch, so that output names (collisions resolved
// over the whole batch) are those of a one-machine run.
std::size_t keep_shard(std::vector<InputJob>& jobs, Shard shard);

}  // namespace vitattn::pipeline
