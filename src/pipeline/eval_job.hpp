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
// Each image is one job on the workers (worker_pool.hpp); the results are gathered in input
// order and the CSVs written once, atomically, after the last job, so their bytes do not depend
// on -j.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/perturbation.hpp"
#include "core/segmentation_metrics.hpp"
#include "core/vit.hpp"
#include "map_methods.hpp"
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
};

// What the run says as it goes: one line each, the file named.
struct EvalEvents {
  std::function<void(const std::string&)> warn;    // a missing or empty mask, a flagged method
  std::function<void(const std::string&)> failed;  // an image that could not be measured
};

struct EvalOutcome {
  std::size_t images = 0, failed = 0;
  std::size_t missing_masks = 0, empty_masks = 0;
  std::vector<std::string> flagged;  // methods whose maps survive the randomisation (Spearman > 0.5)
  std::vector<std::filesystem::path> written;  // eval.csv, eval_images.csv, eval_curves.csv, eval.html
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

// Runs the evaluation. Throws Error (a usage error) before any job when the request does not
// fit (no classifier and no masks: nothing to measure; masks that are no folder). A job's own
// failure is told through events.failed and counted; the CSVs hold the others.
EvalOutcome run_eval(const EvalRequest& request, const EvalEvents& events);

}  // namespace vitattn::pipeline
