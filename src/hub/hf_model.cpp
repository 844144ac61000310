#include "hub/hf_model.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::hub {
namespace {

constexpr const char* kWeights[] = {"model.safetensors", "pytorch_model.bin"};
// The files beside the weights, each fetched when the repository has it: the settings, and
// SigLIP's SentencePiece model (its text tower's tokeniser).
constexpr const char* kConfigs[] = {"config.json", "preprocessor_config.json", "spiece.model"};

// Everything from the cache, without a byte of network: the weights are there for the
// revision's commit (and the configs that the repository has, or that were never asked for).
std::optional<HfModelFiles> from_cache(const HfCache& cache) {
  const auto commit = cache.commit();
  if (!commit) return std::nullopt;
  for (const char* file : kWeights)
    if (const auto path = cache.cached_file(*commit, file)) return HfModelFiles{*path, *commit, false};
  return std::nullopt;
}

}  // namespace

HfModelFiles resolve_hf_model(const std::string& name, const HubSettings& hub) {
  const HfRepo repo = parse_hf_model(name);
  if (hub.cache_dir.empty()) throw Error("hf:" + repo.id + ": no Hugging Face cache folder was given");
  const HfCache cache(hub.cache_dir, repo);
  if (auto cached = from_cache(cache)) return *cached;
  if (hub.offline)
    throw Error(fmt::format("hf:{}: not in the Hugging Face cache ({}) at revision {}, and {}: no download", repo.id,
                            files::display(cache.root()), repo.revision, hub.offline_reason));

  HfModelFiles out;
  out.downloaded = true;
  for (const char* file : kWeights) {
    const auto info = hub_file_info(hub, repo, file);
    if (!info) continue;
    out.weights = fetch_to_cache(hub, cache, *info, file);
    out.commit = info->commit;
    break;
  }
  if (out.weights.empty())
    throw Error(fmt::format("hf:{}: the repository has neither model.safetensors nor pytorch_model.bin at revision {}",
                            repo.id, repo.revision));
  // The configs of the same commit, so that weights and settings agree.
  HfRepo at_commit = repo;
  at_commit.revision = out.commit;
  for (const char* file : kConfigs) {
    if (cache.cached_file(out.commit, file) || cache.known_missing(out.commit, file)) continue;
    if (const auto info = hub_file_info(hub, at_commit, file)) fetch_to_cache(hub, cache, *info, file);
    else cache.mark_missing(out.commit, file);
  }
  cache.write_ref(out.commit);  // last: refs/<rev> names a commit only once its files are there
  return out;
}

}  // namespace vitattn::hub
