#include "model_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "io/model_file.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_file.hpp"
#include "io/vit_loader.hpp"

namespace vitattn::cli {
namespace {

void apply_normalization(const Options& o, Normalization& norm) {
  if (o.mean) norm.mean = o.mean->values;
  if (o.std) norm.std = o.std->values;
  spdlog::debug("normalisation mean {},{},{} std {},{},{}", norm.mean[0], norm.mean[1], norm.mean[2], norm.std[0],
                norm.std[1], norm.std[2]);
}

}  // namespace

io::Model make_model(const Options& o) {
  if (o.model.empty()) {
    SingleHeadModel model = make_seeded_model(o.shape, o.seed);
    spdlog::debug("seeded model (seed {}, untrained): S={} P={} D={} d_k={}", o.seed, model.img_size(),
                  model.patch_size, model.d_model(), model.d_k());
    apply_normalization(o, model.norm);
    model.validate("seeded model");
    check_options_fit(o, model);
    return model;
  }
  const io::SafeTensors st = io::load_tensor_file(o.model, o.key);  // safetensors or .pth
  if (!io::is_encoder_checkpoint(st)) {
    SingleHeadModel model = io::load_model(st);
    spdlog::debug("model {}: single-head layout, S={} P={} D={} d_k={} tokens={}", o.model, model.img_size(),
                  model.patch_size, model.d_model(), model.d_k(), model.pos_embed.rows());
    if (model.grid_size() * model.grid_size() > io::kMaxPatches)
      throw Error(fmt::format("{}: {} patches, over the cap of {}", o.model, model.grid_size() * model.grid_size(),
                              io::kMaxPatches));
    apply_normalization(o, model.norm);
    model.validate(o.model);
    check_options_fit(o, model);
    return model;
  }
  io::LoadedVit loaded = io::load_vit(st, o.overrides);
  if (loaded.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.model, loaded.model.n_heads, loaded.model.d_model());
  apply_normalization(o, loaded.model.norm);
  loaded.model.validate(o.model);
  check_options_fit(o, loaded.model);
  spdlog::debug("model {}: {}", o.model, loaded.summary());
  return std::move(loaded.model);
}

void check_options_fit(const Options& o, const io::Model& model) {
  const auto* vit = std::get_if<VitModel>(&model);
  if (!vit) {
    if (o.forward) throw Error(fmt::format("{}: forward needs a ViT checkpoint; this is the single-head layout", o.model));
    if (o.model.empty()) return;  // the seeded model: CLI11 already refused options that need --model
    for (const char* encoder_only : kEncoderOnly)
      if (o.given.count(encoder_only))
        throw Error(fmt::format("{} needs a ViT checkpoint; {} is the single-head layout", encoder_only, o.model));
    if (o.img_size_given)
      throw Error(fmt::format("--img-size needs a ViT checkpoint; {} is the single-head layout", o.model));
    return;
  }
  if (!o.save_model.empty() && !o.forward)  // forward writes arrays only, and never did look at --save-model
    throw Error(fmt::format("--save-model writes the single-head layout; {} is a full checkpoint", o.model));
  const int p = vit->patch_size;
  const int s = o.shape.img_size;
  if (o.img_size_given && s % p != 0)
    throw Error(fmt::format("--img-size {} is not a multiple of the patch size {}", s, p));
  if (o.img_size_given && (s / p) * (s / p) > io::kMaxPatches)
    throw Error(fmt::format("--img-size {} makes more than {} patches of {} pixels", s, io::kMaxPatches, p));
  if (!o.img_size_given && vit->grid_h * vit->grid_w > io::kMaxPatches)
    throw Error(fmt::format("{}: its own grid is {}x{} patches, over the cap of {}; give a smaller --img-size", o.model,
                            vit->grid_w, vit->grid_h, io::kMaxPatches));
  io::resolve_layer(o.layer, vit->n_layers());  // throws naming the layer and the range
  if (o.head.choice == io::HeadChoice::index && o.head.index >= vit->n_heads)
    throw Error(fmt::format("--head {}: the model has heads 0…{}", o.head.index, vit->n_heads - 1));
}

}  // namespace vitattn::cli
