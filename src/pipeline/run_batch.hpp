#pragma once
// The image command's batch, from a typed request: plan the jobs, check that no output
// replaces what the run reads or another output, take this shard's part, leave out what is
// done, fit a batch-level PCA, run the jobs on workers, write the batch files, and say how it
// went. The front end decides how to show what happens (batch_events.hpp).
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "batch_events.hpp"
#include "batch_plan.hpp"
#include "core/shard.hpp"
#include "core/vit.hpp"
#include "job_outputs.hpp"
#include "output_guard.hpp"
#include "process_image.hpp"
#include "process_video.hpp"
#include "worker_pool.hpp"

namespace vitattn::pipeline {

// Where a PCA picture's components come from (pca_fit.hpp): each image's own fit, one fit over
// every image of the batch (made before the jobs), or a fit file.
struct PcaFitChoice {
  enum class Kind { image, batch, file } kind = Kind::image;
  std::filesystem::path file;  // with Kind::file
};

struct BatchRequest {
  // False: nothing is drawn (no input was named), the model is only saved to saved_model.
  bool draw = true;
  std::vector<std::filesystem::path> inputs;  // files and folders, in order
  std::filesystem::path output;               // the output folder
  bool recursive = false;                     // descend into sub-folders of a folder input
  std::optional<Shard> shard;                 // this process's part of the batch; none: all of it
  int jobs = 0;                               // workers; 0: one per core
  bool skip_existing = false;                 // leave out inputs whose outputs are all there
  const VitModel* model = nullptr;            // must outlive the call
  // Files the run reads besides the inputs (the model file), each with its role, for the guard.
  std::vector<std::pair<std::filesystem::path, std::string>> reads;
  // Files the run writes besides its outputs (the log, the saved model), each with its role and
  // the kind of file it may replace, for the guard.
  using Written = NamedWrite;
  std::vector<Written> writes;
  std::filesystem::path saved_model;  // when not empty: the model is written there, before any job
  // What each job draws and writes. process.view must have passed check_view for the model:
  // the front end checks it as it builds the request, to say a refusal in its own order.
  // Every job writes written_outputs(model, process), found once here.
  ProcessOptions process;
  VideoOptions video;  // codec: chosen here when the batch has a video
  PcaFitChoice pca_fit;  // with process.pca
};

// Why a batch stopped before its last job started.
enum class StopReason {
  none,
  requested,     // BatchEvents::should_stop said so (a signal)
  weights_lost,  // the model's file was cut short under the run (VitModel::weights_lost)
};

struct BatchOutcome {
  bool found_none = false;  // no input to draw was found (and no stop): no job, no batch file
  std::size_t total = 0, videos = 0;  // this process's inputs, skipped ones too; of them videos
  std::size_t skipped = 0, redone = 0;  // skip_existing: already done, and drawn again (other settings)
  BatchCounts counts;
  double seconds = 0;  // the jobs' wall time
  std::vector<InputJob> jobs;  // the jobs run, in the order they were claimed (not_started: the last ones)
  std::vector<std::string> plan_errors;        // inputs that could not be planned (said through events)
  std::vector<std::string> batch_file_errors;  // batch files not written (said through events)
  StopReason stop = StopReason::none;
};

// Runs the batch. Throws Error (a usage or model error): a plan or guard refusal or a PCA fit
// choice that does not fit, before any file is written; a saved model not written, or a batch
// PCA fit that found no readable image, after the output folder is made. Every job's own
// failure is counted and told (job_finished) instead.
BatchOutcome run_batch(const BatchRequest& request, BatchEvents& events);

}  // namespace vitattn::pipeline
