#pragma once
// `vitattn eval`: which map to believe, measured with the field's yardsticks over a set of
// images, for each chosen map method (map_methods.hpp: any row of the table) and a random
// baseline:
// - segmentation against object masks (core/segmentation_metrics.hpp): pixel accuracy, mIoU,
//   mAP, pointing game;
// - positive and negative perturbation (core/perturbation.hpp): the AUC of the top-1 hits as
//   the pixels the map ranks highest (lowest) are removed;
// - the cascading model-randomisation sanity check (core/model_randomisation.hpp): Spearman's
//   correlation of each map with its map on the model whose top blocks are re-drawn.
// Each image is one job on the workers (worker_pool.hpp) and writes its measurements as its
// part, <name>_eval.csv (eval_part.hpp), committed with its settings record as an image job's
// outputs are (job_record.hpp). The CSVs and eval.html, the batch files, are written once,
// atomically, after the last job, from every done image of the batch in input order: those
// measured now from memory, the others from their parts on disk (measured by an earlier run,
// another shard, or passed over by skip_existing; a part whose record is not this run's, or
// whose job failed, is never gathered). So their bytes depend neither on -j nor on how the
// batch was done: interrupted and resumed, or split over shards, they are a one-machine run's.
// As the image command's (batch_files.hpp): a shard writes no batch file, the run without a
// shard (with skip_existing, measuring nothing again) writes them; a run stopped by a signal
// writes them from the images that are done.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/shard.hpp"
#include "core/vit.hpp"
#include "batch_plan.hpp"
#include "eval_part.hpp"
#include "map_methods.hpp"
#include "output_guard.hpp"
#include "process_image.hpp"
#include "worker_pool.hpp"

namespace vitattn::pipeline {

// The target class of the perturbation test and of the class-specific maps, per image, by the
// input's path as given or its file name; an image without one takes its unperturbed top-1.
using EvalLabels = std::map<std::string, ChosenClass>;

struct EvalRequest {
  std::vector<std::filesystem::path> inputs;  // files and folders (a folder's images, sorted)
  std::filesystem::path output;
  bool recursive = false;
  int jobs = 0;  // workers; 0: one per core
  const VitModel* model = nullptr;
  // view.methods: the methods measured (the random baseline is added); the view must have
  // passed check_view (checked_options) for the model. save_attention: each map's values as
  // <name>_cls_<method>.npy (the random baseline's too).
  ProcessOptions process;
  std::optional<std::filesystem::path> masks;  // folder of <stem>.png masks: the segmentation metrics
  EvalLabels labels;
  bool sanity = true;  // the randomisation test (a forward per layer and method more per image)
  std::optional<Shard> shard;  // this process's part of the batch (keep_shard); none: all of it, and the batch files
  bool skip_existing = false;  // leave out images whose part is there with this run's settings record
  std::string settings;        // each job's settings record (OutputSet::settings); empty: none written nor asked for
  // For the output guard (output_guard.hpp): the files the run reads besides its inputs (the
  // model file, the labels), and writes besides its images' parts and its four files (the log).
  std::vector<std::pair<std::filesystem::path, std::string>> reads;
  std::vector<NamedWrite> writes;
};

// What the run says as it goes: one line each, the file named.
struct EvalEvents {
  std::function<void(const std::string&)> warn;    // a missing or empty mask, a flagged method
  std::function<void(const std::string&)> failed;  // an image that could not be measured
  std::function<bool()> should_stop;               // polled: true starts no other image; those in hand finish
  std::function<void()> checked;                   // the request passed its checks, the output guard's too: nothing is written yet
  JobDone finished;                                // each image's end on its worker (worker_pool.hpp)
  std::function<void(const std::vector<InputJob>&)> already_done;  // skip_existing passed these over
};

struct EvalOutcome {
  std::size_t images = 0, failed = 0, not_started = 0;  // this run's jobs (not_started: after a stop)
  std::size_t skipped = 0, redone = 0;  // skip_existing: done already, and measured again (other settings)
  std::size_t gathered = 0;  // the images in the batch files (measured now or before)
  // Over the images gathered (under a shard: measured now): without a mask, with an empty one.
  std::size_t missing_masks = 0, empty_masks = 0;
  std::vector<std::string> flagged;  // methods whose maps survive the randomisation (Spearman > 0.5)
  std::vector<InputJob> jobs;        // this run's jobs, in the order they were claimed (not_started: the last ones)
  std::vector<std::filesystem::path> written;  // eval.csv, eval_images.csv, eval_curves.csv, eval.html; none under a shard
  std::vector<std::string> part_errors;  // parts that could not be read back, one line each: left out
};

// Spearman's correlation above which a method's maps are flagged as not depending on the
// weights, when it stays above at every depth of the randomisation, every block's included.
inline constexpr double kSanityFlag = 0.5;

// The random baseline's seed for an image: kRandomMapSeed mixed with FNV-1a of its file name,
// so each image gets its own map, the same on every run.
std::uint64_t random_map_seed(const std::filesystem::path& input);

// `mask` (any size, 8-bit BGR: nonzero in any channel is object) resized to the model input
// (input_w, input_h) at nearest neighbour, PIL's rule (source ⌊(i + ½)·in/out⌋, torchvision's
// Resize(NEAREST) in the reference): 0/1.
Grid mask_at_input(const cv::Mat& mask, int input_w, int input_h);

// What each job writes (job_outputs.hpp): with save_attention each map's values, the random
// baseline's too, then its part, then its settings record.
OutputSet eval_outputs(const EvalRequest& request);

// Runs the evaluation. Throws Error (a usage error) before any job when the request does not
// fit (no classifier and no masks: nothing to measure; masks that are no folder), or when an
// output would replace a file the run reads or another output (OutputGuard). A job's own
// failure is told through events.failed and counted, and leaves no part; the CSVs hold the others.
EvalOutcome run_eval(const EvalRequest& request, const EvalEvents& events);

}  // namespace vitattn::pipeline
