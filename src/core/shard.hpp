#pragma once
// Which shard of a batch an input belongs to, so that N machines can each take a part
// and together do every input exactly once. Pure: keys and K/N in, a shard out; the caller
// reads the files, and finds K/N (given, or from a batch scheduler: src/cli/scheduler_env.hpp).
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

// A whole decimal number without sign or spaces, at most `max`; nothing otherwise.
std::optional<std::uint64_t> parse_whole(std::string_view text, std::uint64_t max);

}  // namespace vitattn
