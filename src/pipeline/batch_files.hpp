#pragma once
// The batch files (predictions.csv with --top, index.html with --report: batch_files() in
// job_outputs.hpp), rebuilt from the images' parts on disk.
//
// Why: a batch is often done in pieces: interrupted and resumed with --skip-existing, an
// output deleted and redone, split over shards. A batch file made from the images one run
// has just drawn lists those only. So every image writes its part beside its other outputs
// (its rows of predictions.csv, its report page), and the batch file is rebuilt from the
// parts of every finished image of the whole batch (job_finished: the images --skip-existing
// would skip), in input order. However the images were drawn, the batch file is then the one
// an uninterrupted one-machine run leaves over the same finished images.
//
// One process writes a batch file, never several at once: two processes rebuilding it
// together could each replace the other's with an older set of parts (the rename is atomic,
// the gathering before it is not). So a shard writes its images' parts only, and the batch
// files are written by the run without --shard, which with --skip-existing draws nothing
// already done (docs/scaling.md).
#include <filesystem>
#include <string>
#include <vector>

#include "batch_plan.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

struct BatchFilesWritten {
  std::vector<std::filesystem::path> written;  // the batch files written
  std::vector<std::string> errors;             // one line per file not written, or part left out
};

// Rebuilds in `out` every batch file that `outputs` turns on, from the parts of the finished
// image jobs of `jobs` (the whole batch, in input order; videos have no parts). A file is
// written for a batch of at least its min_images images, whole (temporary file, then rename).
// Never throws for one file: a file that cannot be written (a full disk, a symbolic link at
// its name) or a part that is not one is a line in `errors`, and the rest is still written.
BatchFilesWritten write_batch_files(const std::filesystem::path& out, const std::vector<InputJob>& jobs,
                                    const OutputSet& outputs);

}  // namespace vitattn::pipeline
