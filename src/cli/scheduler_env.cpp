#include "scheduler_env.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace vitattn::cli {
namespace {

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// The variable's value as a whole number; Error naming it when it is not one.
std::uint64_t whole_variable(const char* name, const std::string& value) {
  const auto v = parse_whole(value, std::uint64_t{1} << 32);
  if (!v) throw Error(std::string(name) + "=" + in_quotes(value) + " is not a whole number");
  return *v;
}

Shard slurm_shard(const EnvLookup& getenv, std::optional<std::uint32_t> count) {
  const char* names[] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"};
  std::uint64_t v[3] = {};
  for (int i = 0; i < 3; ++i) {
    const auto value = getenv(names[i]);
    if (!value) throw Error(std::string("SLURM_ARRAY_TASK_ID is set but ") + names[i] + " is not");
    v[i] = whole_variable(names[i], *value);
  }
  const std::uint64_t id = v[0], n = v[1], min = v[2];
  if (n < 1 || n > kMaxShards)
    throw Error("SLURM_ARRAY_TASK_COUNT=" + std::to_string(n) + " is not in 1…" + std::to_string(kMaxShards));
  // Shards are the ids min … min + n − 1, so the array must be a plain range: "1-4", not "1,3,5" or "0-15:4".
  if (const auto max = getenv("SLURM_ARRAY_TASK_MAX"); max && whole_variable("SLURM_ARRAY_TASK_MAX", *max) != min + n - 1)
    throw Error("SLURM_ARRAY_TASK_MIN=" + std::to_string(min) + ", SLURM_ARRAY_TASK_MAX=" + *max +
                " and SLURM_ARRAY_TASK_COUNT=" + std::to_string(n) +
                " do not make consecutive ids: submit the array as one range, such as 1-" + std::to_string(n));
  if (const auto step = getenv("SLURM_ARRAY_TASK_STEP"); step && n > 1 && *step != "1")
    throw Error("SLURM_ARRAY_TASK_STEP=" + *step + ": the array ids must be consecutive (step 1)");
  if (id < min || id - min >= n)
    throw Error("SLURM_ARRAY_TASK_ID=" + std::to_string(id) + " is not among the " + std::to_string(n) +
                " ids from SLURM_ARRAY_TASK_MIN=" + std::to_string(min));
  if (count && *count != n)
    throw Error("the shard count " + std::to_string(*count) + " disagrees with SLURM_ARRAY_TASK_COUNT=" + std::to_string(n));
  return {static_cast<std::uint32_t>(id - min + 1), static_cast<std::uint32_t>(n)};
}

Shard indexed_job_shard(const std::string& value, std::optional<std::uint32_t> count) {
  if (!count) throw Error("JOB_COMPLETION_INDEX is set but the shard count is not given (the Job's completions)");
  const std::uint64_t index = whole_variable("JOB_COMPLETION_INDEX", value);
  if (index >= *count)
    throw Error("JOB_COMPLETION_INDEX=" + value + " is not below the shard count " + std::to_string(*count));
  return {static_cast<std::uint32_t>(index + 1), *count};
}

}  // namespace

Shard shard_from_environment(const EnvLookup& getenv, std::optional<std::uint32_t> count) {
  if (count && (*count < 1 || *count > kMaxShards))
    throw Error("a shard count of " + std::to_string(*count) + " is not in 1…" + std::to_string(kMaxShards));
  if (getenv("SLURM_ARRAY_TASK_ID")) return slurm_shard(getenv, count);
  if (const auto index = getenv("JOB_COMPLETION_INDEX")) return indexed_job_shard(*index, count);
  throw Error(
      "no shard in the environment: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX "
      "(a Kubernetes Indexed Job) is set");
}

}  // namespace vitattn::cli
