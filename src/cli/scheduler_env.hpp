#pragma once
// --shard auto: the shard a batch scheduler gave this process, read from its environment.
// The command line is the only layer that reads the environment; the core takes K/N
// (core/shard.hpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/shard.hpp"
#include "environment.hpp"

namespace vitattn::cli {

// - a Slurm job array: SLURM_ARRAY_TASK_ID among SLURM_ARRAY_TASK_MIN … + SLURM_ARRAY_TASK_COUNT − 1
//   (`sbatch --array=1-4` or `--array=0-3`; the ids must be consecutive, so no step or list);
// - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based), with `count` shards given by the
//   caller (the pod does not see the Job's completions).
// Slurm wins when both are set. `count`, when given, must agree with Slurm's. Throws Error
// naming the variables when none is set or they disagree.
Shard shard_from_environment(const EnvLookup& getenv, std::optional<std::uint32_t> count);

}  // namespace vitattn::cli
