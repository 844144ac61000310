#include "model_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/seeded_model.hpp"
#include "hub_fetch.hpp"
#include "hub/hf_cache.hpp"
#include "model/model_config.hpp"
#include "model/model_file.hpp"
#include "tensors/safetensors.hpp"
#include "tensors/tensor_file.hpp"
#include "model/vit_loader.hpp"

namespace vitattn::cli {
namespace {

void apply_normalization(const ModelOptions& o, Normalization& norm) {
  if (o.mean) norm.mean = o.mean->values;
  if (o.std) norm.std = o.std->values;
  spdlog::debug("normalisation mean {},{},{} std {},{},{}", norm.mean[0], norm.mean[1], norm.mean[2], norm.std[0],
                norm.std[1], norm.std[2]);
}

}  // namespace

VitModel make_model(const ModelOptions& o, int verbosity, io::ClassLabels* labels) {
  if (o.file.empty()) {
    VitModel model = make_seeded_model(o.shape, o.seed);
    spdlog::debug("seeded model (seed {}, untrained): S={} P={} D={} d_k={}", o.seed, model.grid_h * model.patch_size,
                  model.patch_size, model.d_model(), model.d_head());
    apply_normalization(o, model.norm);
    model.validate("seeded model");
    return model;
  }
  // hf:ORG/NAME is a file in the Hugging Face cache (fetched there when missing).
  const std::filesystem::path path = io::is_hf_model(o.file) ? fetch_hf_model(o.file, verbosity) : std::filesystem::path(o.file);
  const io::SafeTensors st = io::load_tensor_file(path, o.key);  // safetensors or .pth
  // config.json / preprocessor_config.json beside the weights (a hub snapshot): the command line wins.
  const io::ModelConfig config = io::read_model_config(path.parent_path());
  if (!config.sources.empty()) spdlog::debug("settings from {}", config.sources);
  io::VitOverrides overrides = o.overrides;
  if (overrides.heads == 0) overrides.heads = config.heads;
  if (!overrides.eps && config.eps) overrides.eps = config.eps;
  io::LoadedVit loaded = io::load_vit(st, overrides);
  if (loaded.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.file, loaded.model.n_heads, loaded.model.d_model());
  if (o.overrides.heads == 0 && config.heads > 0) loaded.heads_from = config.sources;
  if (config.patch_size > 0 && config.patch_size != loaded.model.patch_size)
    throw Error(fmt::format("{}: its config says patch_size {}, its patch embedding has {}", o.file, config.patch_size,
                            loaded.model.patch_size));
  if (config.mean) loaded.model.norm.mean = *config.mean;
  if (config.std) loaded.model.norm.std = *config.std;
  apply_normalization(o, loaded.model.norm);
  loaded.model.validate(o.file, VitModel::CheckValues::no);  // load_vit checked every weight's values
  spdlog::debug("model {}: {}", o.file, loaded.summary());
  if (labels && loaded.model.w_head.size() > 0) {
    *labels = io::find_class_labels(st.metadata(), o.file, path.parent_path() / "config.json",
                                    static_cast<int>(loaded.model.w_head.rows()));
    spdlog::debug("class names: {}", labels->source.empty() ? "none (indices)" : labels->source);
  }
  return std::move(loaded.model);
}

}  // namespace vitattn::cli
