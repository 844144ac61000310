#pragma once
// A job's outputs as one commit, and what --skip-existing and the batch files take for done.
//
// With OutputSet::settings, each job writes, after all its other outputs, its settings record
// <name>_settings.txt: the settings that made them (the model's content and every option that
// changes an output's bytes: cli/settings_record.hpp). The record is the job's commit:
// - a job starts by removing its record, then writes its outputs, then the record;
// - a job that fails removes its outputs, what it wrote and what an earlier run left under the
//   same names: a failed image leaves no outputs and no parts, and nothing of it is gathered;
// - a job is done when every output is there as a regular file and its record is this run's.
// So outputs that another run's settings made (a record that differs), an older vitattn made
// (no record), or a job that died midway left (no record) are never taken for done:
// --skip-existing redoes them and the batch files leave their parts out.
#include <filesystem>
#include <functional>

#include "batch_plan.hpp"
#include "job_outputs.hpp"

namespace vitattn::pipeline {

enum class JobState {
  to_do,  // an output other than the record is missing, or not a regular file (a symlink)
  stale,  // the other outputs are there, but the record is missing or holds other settings
  done,   // every output is there and the record holds `outputs.settings` (or none is asked for)
};

// The state of the job whose outputs are output_paths(output_base, outputs, video).
JobState job_state(const std::filesystem::path& output_base, const OutputSet& outputs, bool video);

// Removes the job's record, runs `write` (which writes every other output of the job), then
// writes the record. When `write` or the record throws, removes every output of the job that
// is a regular file (never a symlink: the output folders were checked by prepare_output_path,
// which must come first) and rethrows. Throws Error naming the input when the old record
// cannot be removed.
void commit_job(const InputJob& job, const OutputSet& outputs, const std::function<void()>& write);

}  // namespace vitattn::pipeline
