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
  // output_base + "_attn.png" (or the --format's extension), "_attn.npy", "_cls.npy".
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
// symlinked folders followed (no loops); a broken symlink with an image name is a job, so
// that it gets its error. Every output lies below `out_dir`: it is named from the input's
// stem and, in a walk, the sub-folder the input was found in (an input whose output would
// not, which should not happen, becomes an error instead of a job). Two inputs never share an output: colliding stems
// in one output folder become "<stem>_<ext>", and any collision left after that (or with
// an input file) gets "-2", "-3", … in input order. `skipped` hears of files passed over.
// `overlay_suffix` names the overlay ("_attn.png", "_attn.jpg", …; see output_suffixes).
BatchPlan plan_batch(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& out_dir,
                     bool recursive, const std::function<void(const std::filesystem::path&)>& skipped = {},
                     const char* overlay_suffix = "_attn.png");

std::filesystem::path with_suffix(const std::filesystem::path& base, const char* suffix);

// The suffixes a job writes: the overlay's ("_attn.png", or "_attn.jpg" / "_attn.webp" with
// --format), plus "_attn.npy" and "_cls.npy" with --save-attention.
std::vector<const char*> output_suffixes(bool save_attention, const char* overlay_suffix = "_attn.png");

// --skip-existing: removes the jobs whose outputs are all there as regular files (a
// symlink does not count), and returns how many. Outputs are written whole (temporary
// file, then rename), so an output that exists is complete.
std::size_t drop_finished_jobs(BatchPlan& plan, bool save_attention, const char* overlay_suffix = "_attn.png");

// Makes the folders between `out_dir` and the job's outputs, and refuses, with Error
// "<input>: <path> ... symbolic link ...", a symlink on the way (a mirrored sub-folder
// such as out/sub -> /elsewhere) or at an output's name (out/x_attn.png -> /etc/x): what
// the user put in the output folder is never followed out of it, nor replaced. `out_dir`
// itself must exist, and may be a link: the user named it. Call before writing a job's outputs.
void prepare_output_path(const std::filesystem::path& out_dir, const ImageJob& job, bool save_attention,
                         const char* overlay_suffix = "_attn.png");

}  // namespace vitattn::io
