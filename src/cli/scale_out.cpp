#include "scale_out.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <iterator>

#include "core/error.hpp"
#include "files/file_list.hpp"
#include "scheduler_env.hpp"

namespace vitattn::cli {
namespace {

const CLI::Validator kShardSpec(
    [](std::string& s) -> std::string {
      if (s == "auto") return {};
      try {
        parse_shard(s);
      } catch (const Error& e) {
        return e.what();
      }
      return {};
    },
    "", "shard");

}  // namespace

void add_scale_out_options(CLI::App& app, ScaleOutOptions& o) {
  const std::string group = "Many machines";
  app.add_option("--shard", o.shard,
                 "Take shard K of N (1-based) of the inputs, by a stable hash of each input's path below its folder; "
                 "auto: from a Slurm job array (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)")
      ->type_name("K/N|auto")
      ->check(kShardSpec)
      ->group(group);
  app.add_option("--shard-count", o.shard_count,
                 "The number of shards for --shard auto under a Kubernetes Indexed Job (its completions)")
      ->check(CLI::Range(1u, kMaxShards))
      ->type_name("N")
      ->group(group);
  app.add_option("--files-from", o.files_from,
                 "Also take the paths listed in LIST, one per line (- reads standard input); relative paths are "
                 "relative to the current folder")
      ->type_name("LIST")
      ->group(group);
  app.add_flag("-0,--null", o.null_separated, "The --files-from list is NUL-separated (find -print0)")->group(group);
  app.add_option("--log-json", o.log_json,
                 "Write one JSON line per input to FILE as it finishes (path, status, error, outputs, ms); - for "
                 "standard output")
      ->type_name("FILE")
      ->group(group);
}

void check_scale_out(const CLI::App& app, const ScaleOutOptions& o) {
  if (app.count("--shard-count") && o.shard != "auto")
    throw CLI::ValidationError("--shard-count goes with --shard auto (a Kubernetes Indexed Job's completions)");
  if (o.null_separated && !app.count("--files-from")) throw CLI::ValidationError("-0 goes with --files-from");
  if (app.count("--files-from") && o.files_from.empty()) throw CLI::ValidationError("--files-from: empty name");
  if (app.count("--log-json") && o.log_json.empty()) throw CLI::ValidationError("--log-json: empty name");
}

std::optional<Shard> resolve_shard(const ScaleOutOptions& o) {
  if (o.shard.empty()) return std::nullopt;
  if (o.shard != "auto") return parse_shard(o.shard);  // checked by the validator already
  const bool slurm = process_environment("SLURM_ARRAY_TASK_ID").has_value();
  if (!slurm && process_environment("JOB_COMPLETION_INDEX") && o.shard_count == 0)
    throw Error("--shard auto: JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job); give --shard-count N, "
                "the Job's completions");
  try {
    return shard_from_environment(process_environment, o.shard_count ? std::optional(o.shard_count) : std::nullopt);
  } catch (const Error& e) {
    throw Error(fmt::format("--shard auto: {}", e.what()));
  }
}

std::vector<std::filesystem::path> batch_inputs(const std::vector<std::string>& named, const ScaleOutOptions& o) {
  std::vector<std::filesystem::path> inputs(named.begin(), named.end());
  if (o.files_from.empty()) return inputs;
  try {
    auto listed = files::read_file_list(o.files_from, o.null_separated);
    inputs.insert(inputs.end(), std::make_move_iterator(listed.begin()), std::make_move_iterator(listed.end()));
  } catch (const Error& e) {
    const bool nul_in_lines = !o.null_separated && std::string_view(e.what()).find("NUL byte") != std::string_view::npos;
    throw Error(fmt::format("--files-from {}{}", e.what(), nul_in_lines ? " (give -0 for such a list)" : ""));
  }
  return inputs;
}

}  // namespace vitattn::cli
