#pragma once
// The batch files (predictions.csv with --top, index.html with --report: batch_files() in
// job_outputs.hpp), rebuilt from the images' parts on disk.
//
// Why: a batch is often done in pieces: interrupted and resumed with --skip-existing, an
// output deleted and redone, split over shards. A batch file made from the images one run
// has just drawn lists those only. So every image writes its part beside its other outputs
// (its rows of predictions.csv, its report page), and the batch file is rebuilt from the
// parts of every done image (job_record.hpp: every output there, and a settings record that
// is this run's: the images --skip-existing would skip), the batch's in input order. However
// the images were drawn, the batch file is then the one an uninterrupted one-machine run
// leaves over the same done images. A part whose image failed, or was made with other
// settings, or whose job died midway, is never gathered.
//
// Several batches into one folder (other inputs, the same settings): a batch file lists them
// all, this batch's images first, then every other done image whose record is in the output
// tree, by path. Batches that end at the same time on one machine take turns (an files::LockFile
// in the output folder, held from the gathering to the rename), so the last one to write sees
// every image the others finished.
//
// A shard writes no batch file: on shared storage (NFS, Lustre, CephFS) the lock may not hold
// between machines, and two processes rebuilding one file together could each replace the
// other's with an older set of parts. So a shard writes its images' parts only, and the batch
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

// Rebuilds in `out` every batch file that `outputs` turns on, from the parts of the done image
// jobs of `jobs` (the whole batch, in input order; videos have no parts), then of the other done
// images in the output tree, under the folder's lock. A file is written when the batch or the
// images gathered are at least its min_images, whole (temporary file, then rename). Never
// throws: a file that cannot be written (a full disk, a symbolic link at its name) or a part
// that is not one is a line in `errors`, and the rest is still written.
BatchFilesWritten write_batch_files(const std::filesystem::path& out, const std::vector<InputJob>& jobs,
                                    const OutputSet& outputs);

}  // namespace vitattn::pipeline
