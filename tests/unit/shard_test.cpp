// Which shard takes which input (core/shard.hpp): the hash and the split. The environment's
// shard (--shard auto) is the CLI's: scheduler_env_test.cpp.
#include "core/shard.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace vitattn {
namespace {

// "img_00000<suffix>", "img_00001<suffix>", …: names like a camera's.
std::vector<std::string> names(int from, int to, const std::string& suffix = ".jpg") {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) {
    const std::string n = std::to_string(i);
    out.push_back("img_" + std::string(5 - std::min<std::size_t>(5, n.size()), '0') + n + suffix);
  }
  return out;
}

TEST(Shard, Fnv1a64MatchesThePublishedVectors) {
  // From the FNV reference test suite (Fowler, Noll, Vo; draft-eastlake-fnv).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(fnv1a64("\xff"), (0xcbf29ce484222325ULL ^ 0xffULL) * 0x100000001b3ULL) << "bytes are unsigned";
}

TEST(Shard, Fmix64MatchesAnIndependentComputation) {
  // Python's big integers, masked to 64 bits, from MurmurHash3's constants:
  //   h ^= h >> 33; h *= 0xff51afd7ed558ccd; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33
  EXPECT_EQ(fmix64(0), 0u);
  EXPECT_EQ(fmix64(1), 0xb456bcfc34c2cb2cULL);
  EXPECT_EQ(fmix64(0xcbf29ce484222325ULL), 0xefd01f60ba992926ULL);
  EXPECT_EQ(fmix64(0x85944171f73967e8ULL), 0x2c22194922d1672bULL);
}

TEST(Shard, EveryKeyIsInExactlyOneShard) {
  const auto keys = names(0, 3000);
  for (std::uint32_t n : {1u, 2u, 3u, 4u, 7u, 16u}) {
    std::map<std::uint32_t, int> per_shard;
    for (const auto& key : keys) {
      int taken = 0;
      for (std::uint32_t k = 1; k <= n; ++k) taken += in_shard(key, {k, n}) ? 1 : 0;
      ASSERT_EQ(taken, 1) << key << " with N = " << n;
      const std::uint32_t s = shard_of(key, n);
      ASSERT_GE(s, 1u);
      ASSERT_LE(s, n);
      ++per_shard[s];
    }
    EXPECT_EQ(per_shard.size(), n) << "every shard gets some of 3000 keys, N = " << n;
  }
}

TEST(Shard, AddingKeysMovesNoneOfTheOthers) {
  const auto before = names(0, 1000);
  std::map<std::string, std::uint32_t> assigned;
  for (const auto& key : before) assigned[key] = shard_of(key, 4);
  // A folder that grew: more files with the same pattern, and others in between.
  auto after = names(0, 2000);
  for (const auto& key : names(0, 1000, "_b.jpg")) after.push_back(key);
  std::size_t moved = 0;
  for (const auto& key : after)
    if (assigned.count(key) && assigned[key] != shard_of(key, 4)) ++moved;
  EXPECT_EQ(moved, 0u);
}

TEST(Shard, SharesAreEven) {
  const auto keys = names(0, 20000);
  for (std::uint32_t n : {2u, 3u, 4u, 8u}) {
    std::vector<int> count(n + 1);
    for (const auto& key : keys) ++count[shard_of(key, n)];
    const double mean = 20000.0 / n;
    for (std::uint32_t k = 1; k <= n; ++k)
      EXPECT_NEAR(count[k], mean, 0.05 * mean) << "shard " << k << " of " << n;
  }
}

TEST(Shard, LowBitsDoNotFollowTheBytesParity) {
  // Plain FNV-1a mod 2 is the parity of the odd bytes: these thirteen names, whose letters are all
  // even bytes, would all go to one shard of two. The finaliser spreads them.
  std::map<std::uint32_t, int> per_shard;
  for (const char* c = "bdfhjlnprtvxz"; *c; ++c) ++per_shard[shard_of(std::string(1, *c) + ".png", 2)];
  EXPECT_EQ(per_shard.size(), 2u);
}

TEST(Shard, ParsesKOverN) {
  const Shard s = parse_shard("2/8");
  EXPECT_EQ(s.index, 2u);
  EXPECT_EQ(s.count, 8u);
  EXPECT_EQ(parse_shard("1/1").count, 1u);
  for (const char* bad : {"0/4", "5/4", "4", "a/b", "-1/4", "1/0", " 1/4", "1/4 ", "1/4/5", "", "/", "1/", "/4",
                          "1/1000001", "99999999999999999999/3"})
    EXPECT_THROW(parse_shard(bad), Error) << bad;
  try {
    parse_shard("0/4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("numbered from 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vitattn
