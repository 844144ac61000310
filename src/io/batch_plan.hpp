#pragma once
// Which files a run reads and where each one's outputs go.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace vitattn::io {

struct ImageJob {
  std::filesystem::path input;
  // Output path without its suffix: "<out>/<sub-folder>/<stem>"; outputs are
  // output_base + "_attn.png", "_attn.npy", "_cls.npy".
  std::filesystem::path output_base;
};

struct BatchPlan {
  std::vector<ImageJob> jobs;
  std::vector<std::string> renamed;  // notes on stem collisions and how they were resolved
  std::vector<std::string> errors;   // folders that could not be listed, one line each
};

bool has_image_extension(const std::filesystem::path& path);

// Files named directly are always jobs (even without an image extension: the decoder
// then says what is wrong). Folders contribute their image files, sorted, descending into
// sub-folders only when `recursive`; the output folder itself is never walked, nor are
// symlinked folders followed (no loops). Two inputs never share an output: colliding stems
// in one output folder become "<stem>_<ext>", and any collision left after that (or with
// an input file) gets "-2", "-3", … in input order. `skipped` hears of files passed over.
BatchPlan plan_batch(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& out_dir,
                     bool recursive, const std::function<void(const std::filesystem::path&)>& skipped = {});

std::filesystem::path with_suffix(const std::filesystem::path& base, const char* suffix);

}  // namespace vitattn::io
