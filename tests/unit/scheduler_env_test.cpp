// --shard auto's shard from a batch scheduler's environment (cli/scheduler_env.hpp), with the
// environment a map: a Slurm job array, a Kubernetes Indexed Job, and what is refused.
#include "cli/scheduler_env.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.hpp"

namespace vitattn::cli {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> std::optional<std::string> {
      const auto it = vars.find(name);
      return it == vars.end() ? std::nullopt : std::optional(it->second);
    };
  }
};

std::string error_of(const Env& env, std::optional<std::uint32_t> count) {
  try {
    const Shard s = shard_from_environment(env.lookup(), count);
    return "no error: shard " + std::to_string(s.index) + "/" + std::to_string(s.count);
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(Shard, SlurmArrayGivesTheTasksPlace) {
  // sbatch --array=1-4: ids 1…4, task 3 is shard 3 of 4.
  Env slurm{{{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"},
             {"SLURM_ARRAY_TASK_MAX", "4"}, {"SLURM_ARRAY_TASK_STEP", "1"}}};
  Shard s = shard_from_environment(slurm.lookup(), std::nullopt);
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 4u);
  // --array=0-3: task 0 is shard 1.
  Env zero{{{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}}};
  s = shard_from_environment(zero.lookup(), 4u);
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.count, 4u);
  // Slurm wins over a stray JOB_COMPLETION_INDEX.
  zero.vars["JOB_COMPLETION_INDEX"] = "2";
  EXPECT_EQ(shard_from_environment(zero.lookup(), std::nullopt).index, 1u);
}

TEST(Shard, SlurmArrayThatIsNotOneRangeIsRefused) {
  const Env base{{{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}}};
  Env list = base;  // --array=1,3,5
  list.vars["SLURM_ARRAY_TASK_MAX"] = "5";
  EXPECT_NE(error_of(list, std::nullopt).find("consecutive"), std::string::npos) << error_of(list, std::nullopt);
  Env step = base;  // --array=1-5:2
  step.vars["SLURM_ARRAY_TASK_STEP"] = "2";
  EXPECT_NE(error_of(step, std::nullopt).find("SLURM_ARRAY_TASK_STEP"), std::string::npos);
  Env outside = base;
  outside.vars["SLURM_ARRAY_TASK_ID"] = "4";
  EXPECT_NE(error_of(outside, std::nullopt).find("SLURM_ARRAY_TASK_ID=4"), std::string::npos);
  Env missing = base;
  missing.vars.erase("SLURM_ARRAY_TASK_MIN");
  EXPECT_NE(error_of(missing, std::nullopt).find("SLURM_ARRAY_TASK_MIN is not"), std::string::npos);
  Env garbage = base;
  garbage.vars["SLURM_ARRAY_TASK_COUNT"] = "4x";
  EXPECT_NE(error_of(garbage, std::nullopt).find("SLURM_ARRAY_TASK_COUNT=\"4x\""), std::string::npos);
  EXPECT_NE(error_of(base, 4u).find("disagrees"), std::string::npos) << "a given count must agree";
}

TEST(Shard, IndexedJobNeedsTheCount) {
  const Env k8s{{{"JOB_COMPLETION_INDEX", "2"}}};
  const Shard s = shard_from_environment(k8s.lookup(), 4u);
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_NE(error_of(k8s, std::nullopt).find("shard count is not given"), std::string::npos);
  EXPECT_NE(error_of(k8s, 2u).find("not below"), std::string::npos) << error_of(k8s, 2u);
  const Env nothing;
  const std::string none = error_of(nothing, 4u);
  EXPECT_NE(none.find("SLURM_ARRAY_TASK_ID"), std::string::npos) << none;
  EXPECT_NE(none.find("JOB_COMPLETION_INDEX"), std::string::npos) << none;
}

}  // namespace
}  // namespace vitattn::cli
