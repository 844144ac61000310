#include "shard.hpp"

#include "error.hpp"

namespace vitattn {

std::optional<std::uint64_t> parse_whole(std::string_view s, std::uint64_t max) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

namespace {

// Built up in place: GCC 12 at -O3 warns a false -Wrestrict on "\"" + std::string(s).
std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t fmix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

std::uint32_t shard_of(std::string_view key, std::uint32_t count) {
  if (count == 0) throw Error("a shard count of 0");
  return 1 + static_cast<std::uint32_t>(fmix64(fnv1a64(key)) % count);
}

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  const auto k = slash == std::string_view::npos ? std::nullopt : parse_whole(text.substr(0, slash), kMaxShards);
  const auto n = slash == std::string_view::npos ? std::nullopt : parse_whole(text.substr(slash + 1), kMaxShards);
  if (!k || !n)
    throw Error(quoted(text) + " is not K/N with whole numbers 1 ≤ K ≤ N ≤ " + std::to_string(kMaxShards) +
                " (e.g. 2/8)");
  if (*n == 0 || *k == 0 || *k > *n)
    throw Error(quoted(text) + ": K must be in 1…N (shards are numbered from 1), e.g. 1/" + std::to_string(*n ? *n : 4));
  return {static_cast<std::uint32_t>(*k), static_cast<std::uint32_t>(*n)};
}

}  // namespace vitattn
