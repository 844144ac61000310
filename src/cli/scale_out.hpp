#pragma once
// Splitting a batch over machines: --shard, --shard-count, --files-from, -0 and --log-json,
// declared here so that options.cpp only has to call add_scale_out_options.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/shard.hpp"

namespace vitattn::cli {

struct ScaleOutOptions {
  std::string shard;                // "K/N" or "auto"; empty: the whole batch
  std::uint32_t shard_count = 0;    // with "auto" under a Kubernetes Indexed Job
  std::string files_from;           // a manifest of inputs, "-" for standard input
  bool null_separated = false;      // -0: the manifest is NUL-separated (find -print0)
  std::string log_json;             // JSON Lines, one line per input; "-" for standard output
};

void add_scale_out_options(CLI::App& app, ScaleOutOptions& options);

// Rules between these options (-0 needs --files-from, …); throws CLI::ValidationError.
void check_scale_out(const CLI::App& app, const ScaleOutOptions& options);

// The shard this process takes: parsed from K/N, or read from the environment for "auto";
// nothing without --shard. Throws Error("--shard auto: …") when the environment does not say.
std::optional<Shard> resolve_shard(const ScaleOutOptions& options);

// The command line's inputs followed by the --files-from list's. Throws Error naming the list.
std::vector<std::filesystem::path> batch_inputs(const std::vector<std::string>& named, const ScaleOutOptions& options);

}  // namespace vitattn::cli
