#include "model_setup.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "hub_fetch.hpp"
#include "io/hf_cache.hpp"
#include "io/model_config.hpp"
#include "io/model_file.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_file.hpp"
#include "io/vit_loader.hpp"

namespace vitattn::cli {
namespace {

void apply_normalization(const Options& o, Normalization& norm) {
  if (!o.mean.empty()) norm.mean = io::parse_rgb_triplet(o.mean, "--mean");
  if (!o.std.empty()) norm.std = io::parse_rgb_triplet(o.std, "--std");
  spdlog::debug("normalisation mean {},{},{} std {},{},{}", norm.mean[0], norm.mean[1], norm.mean[2], norm.std[0],
                norm.std[1], norm.std[2]);
}

}  // namespace

io::Model make_model(const Options& o, io::ClassLabels* labels) {
  if (o.model.empty()) {
    SingleHeadModel model = make_seeded_model(o.shape, o.seed);
    spdlog::debug("seeded model (seed {}, untrained): S={} P={} D={} d_k={}", o.seed, model.img_size(),
                  model.patch_size, model.d_model(), model.d_k());
    apply_normalization(o, model.norm);
    model.validate("seeded model");
    return model;
  }
  // hf:ORG/NAME is a file in the Hugging Face cache (fetched there when missing).
  const std::filesystem::path path = io::is_hf_model(o.model) ? fetch_hf_model(o) : std::filesystem::path(o.model);
  const io::SafeTensors st = io::load_tensor_file(path, o.key);  // safetensors or .pth
  if (!io::is_encoder_checkpoint(st)) {
    if (o.img_size_given) throw Error(o.model + ": --img-size needs a ViT checkpoint; this is the single-head layout");
    SingleHeadModel model = io::load_model(st);
    spdlog::debug("model {}: single-head layout, S={} P={} D={} d_k={} tokens={}", o.model, model.img_size(),
                  model.patch_size, model.d_model(), model.d_k(), model.pos_embed.rows());
    if (model.grid_size() * model.grid_size() > io::kMaxPatches)
      throw Error(o.model + ": " + std::to_string(model.grid_size() * model.grid_size()) + " patches, over the cap of " +
                  std::to_string(io::kMaxPatches));
    apply_normalization(o, model.norm);
    model.validate(o.model);
    return model;
  }
  // config.json / preprocessor_config.json beside the weights (a hub snapshot): the command line wins.
  const io::ModelConfig config = io::read_model_config(path.parent_path());
  if (!config.sources.empty()) spdlog::debug("settings from {}", config.sources);
  io::VitOverrides overrides;
  overrides.family = o.family;
  overrides.heads = o.heads > 0 ? o.heads : config.heads;
  if (o.eps > 0) overrides.eps = static_cast<float>(o.eps);
  else if (config.eps) overrides.eps = config.eps;
  if (!o.gelu.empty()) overrides.gelu = o.gelu == "tanh" ? Gelu::tanh : Gelu::erf;
  if (!o.pos_interp.empty()) overrides.pos_interp = io::pos_interp_by_name(o.pos_interp);
  io::LoadedVit loaded = io::load_vit(st, overrides);
  if (loaded.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.model, loaded.model.n_heads, loaded.model.d_model());
  if (o.heads == 0 && config.heads > 0) loaded.heads_from = config.sources;
  if (config.patch_size > 0 && config.patch_size != loaded.model.patch_size)
    throw Error(o.model + ": its config says patch_size " + std::to_string(config.patch_size) +
                ", its patch embedding has " + std::to_string(loaded.model.patch_size));
  if (config.mean) loaded.model.norm.mean = *config.mean;
  if (config.std) loaded.model.norm.std = *config.std;
  apply_normalization(o, loaded.model.norm);
  loaded.model.validate(o.model);
  const int p = loaded.model.patch_size;
  if (o.img_size_given && o.shape.img_size % p != 0)
    throw Error("--img-size " + std::to_string(o.shape.img_size) + " is not a multiple of the patch size " + std::to_string(p));
  if (!o.img_size_given && loaded.model.grid_h * loaded.model.grid_w > io::kMaxPatches)
    throw Error(o.model + ": its own grid is " + std::to_string(loaded.model.grid_w) + "x" +
                std::to_string(loaded.model.grid_h) + " patches, over the cap of " + std::to_string(io::kMaxPatches) +
                "; give a smaller --img-size");
  if (o.img_size_given && (o.shape.img_size / p) * (o.shape.img_size / p) > io::kMaxPatches)
    throw Error("--img-size " + std::to_string(o.shape.img_size) + " makes more than " + std::to_string(io::kMaxPatches) +
                " patches of " + std::to_string(p) + " pixels");
  spdlog::debug("model {}: {}", o.model, loaded.summary());
  if (labels && loaded.model.w_head.size() > 0) {
    *labels = io::find_class_labels(st.metadata(), o.model, path.parent_path() / "config.json",
                                    static_cast<int>(loaded.model.w_head.rows()));
    spdlog::debug("class names: {}", labels->source.empty() ? "none (indices)" : labels->source);
  }
  return std::move(loaded.model);
}

}  // namespace vitattn::cli
