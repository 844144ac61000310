#pragma once
// Every output folder a run makes is made here: the output folder itself, and the
// sub-folders below it that a job's outputs go to (never through a symbolic link).
#include <filesystem>

#include "batch_plan.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

// Makes `out` (and its parents) and checks that it is a folder that takes files; throws Error
// "<out>: …" otherwise. Called before any work starts.
void prepare_output_folder(const std::filesystem::path& out);

// Makes the folders between `out_dir` and the job's outputs, and refuses, with Error
// "<input>: <path> ... symbolic link ...", a symlink on the way (a mirrored sub-folder
// such as out/sub -> /elsewhere) or at an output's name (out/x_attn.png -> /etc/x): what
// the user put in the output folder is never followed out of it, nor replaced. `out_dir`
// itself must exist, and may be a link: the user named it. Call before writing a job's outputs.
void prepare_output_path(const std::filesystem::path& out_dir, const InputJob& job, const OutputSet& outputs);


// What comes after `root` in `p`, when `p` lies below `root` by its words alone: relative,
// not empty, no "." or ".." anywhere. Empty otherwise.
std::filesystem::path below(const std::filesystem::path& root, const std::filesystem::path& p);

}  // namespace vitattn::pipeline
