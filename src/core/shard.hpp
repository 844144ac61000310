#pragma once
// Which shard of a batch an input belongs to, so that N machines can each take a part
// and together do every input exactly once. Pure: keys and environment values in, a
// shard out; the caller reads the files and the environment.
//
// The assignment, written down so that any tool can reproduce it:
//   h     = FNV-1a 64 of the key's bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
//   h     = MurmurHash3's fmix64 finaliser of h (FNV-1a's low bits follow the bytes' low bits
//           too closely: h mod 2 is the parity of the odd bytes, so "b.png", "d.png", … would
//           all land in one of two shards)
//   shard = 1 + h mod N
// The key is the input's path relative to the folder it was found in ('/'-separated), so
// an input's shard depends on its own name only: adding files never moves the others.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace vitattn {

struct Shard {
  std::uint32_t index = 1;  // 1-based: 1 … count
  std::uint32_t count = 1;
};

inline constexpr std::uint32_t kMaxShards = 1'000'000;

std::uint64_t fnv1a64(std::string_view bytes);
std::uint64_t fmix64(std::uint64_t h);

// 1 + fmix64(fnv1a64(key)) mod count: the shard (1-based) that takes `key`.
std::uint32_t shard_of(std::string_view key, std::uint32_t count);

inline bool in_shard(std::string_view key, Shard shard) { return shard_of(key, shard.count) == shard.index; }

// "K/N" with 1 ≤ K ≤ N ≤ kMaxShards, whole numbers in decimal; else Error saying what is wrong.
Shard parse_shard(std::string_view text);

// The shard a batch scheduler gave this process, from its environment (`getenv` returns
// the variable's value, or nothing when it is not set):
// - a Slurm job array: SLURM_ARRAY_TASK_ID among SLURM_ARRAY_TASK_MIN … + SLURM_ARRAY_TASK_COUNT − 1
//   (`sbatch --array=1-4` or `--array=0-3`; the ids must be consecutive, so no step or list);
// - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based), with `count` shards given by the
//   caller (the pod does not see the Job's completions).
// Slurm wins when both are set. `count`, when given, must agree with Slurm's. Throws Error
// naming the variables when none is set or they disagree.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
Shard shard_from_environment(const EnvLookup& getenv, std::optional<std::uint32_t> count);

}  // namespace vitattn
