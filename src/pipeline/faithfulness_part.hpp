#pragma once
// --faithfulness: each image's deletion and insertion AUCs (core/faithfulness.hpp) for the maps
// it was given and for the random baseline, written as its part of the batch's
// faithfulness.csv (<name>_faithfulness.csv; batch_files.hpp gathers them, in input order).
// The caller hands the maps with their method names and classes: whichever maps a run draws,
// this step scores them the same way.
#include <filesystem>
#include <string>
#include <vector>

#include "core/faithfulness.hpp"
#include "core/image_tensor.hpp"
#include "core/vit.hpp"

namespace vitattn::pipeline {

struct FaithfulnessRequest {
  int steps = 16;  // K: --faithfulness-steps
};

// One map to score: its method's name ("attention", "rollout", …) and the class it is scored for.
struct ScoredMap {
  std::string method;
  int class_index = 0;
  Matrix map;  // (grid_h, grid_w)
};

// One row of faithfulness.csv.
struct FaithfulnessRow {
  std::string method;
  int class_index = 0;
  double deletion_auc = 0.0, insertion_auc = 0.0;
  int steps = 0;
};

// The insertion curve's start: x (3, H, W), the normalised model input, blurred per channel by
// a Gaussian of σ = patch_size pixels (OpenCV's GaussianBlur, kernel 2·⌈4σ⌉+1 pixels square,
// border BORDER_REFLECT_101: …cb|abcd|cb…).
ImageTensor blurred_input(const ImageTensor& x, int patch_size);

// The rows of one image: for each class in the order the maps first name it, that class's
// maps in the order given, then "random" (core's random_map, its fixed seed) for it.
std::vector<FaithfulnessRow> faithfulness_rows(const VitModel& model, const ImageTensor& x,
                                               const std::vector<ScoredMap>& maps, const FaithfulnessRequest& request,
                                               bool scale);

// RFC 4180 CSV, header "path,method,class,deletion_auc,insertion_auc,steps" (batch_files()),
// one line per row, the AUCs with 9 significant digits.
std::string faithfulness_csv(const std::filesystem::path& input, const std::vector<FaithfulnessRow>& rows);

// faithfulness_rows of `input` written atomically to `part` (temp + rename). Throws Error
// naming the input (a map the core cannot score) or the part (a write that failed).
void write_faithfulness_part(const std::filesystem::path& part, const std::filesystem::path& input,
                             const VitModel& model, const ImageTensor& x, const std::vector<ScoredMap>& maps,
                             const FaithfulnessRequest& request, bool scale);

}  // namespace vitattn::pipeline
