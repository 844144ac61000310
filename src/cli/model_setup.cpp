#include "model_setup.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/seeded_model.hpp"
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

VitModel make_model(const Options& o) {
  if (o.model.empty()) {
    VitModel model = make_seeded_model(o.shape, o.seed);
    spdlog::debug("seeded model (seed {}, untrained): S={} P={} D={} d_k={}", o.seed, model.grid_h * model.patch_size,
                  model.patch_size, model.d_model(), model.d_head());
    apply_normalization(o, model.norm);
    model.validate("seeded model");
    return model;
  }
  const io::SafeTensors st = io::load_tensor_file(o.model, o.key);  // safetensors or .pth
  io::LoadedVit loaded = io::load_vit(st, o.overrides);
  if (loaded.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.model, loaded.model.n_heads, loaded.model.d_model());
  apply_normalization(o, loaded.model.norm);
  loaded.model.validate(o.model);
  spdlog::debug("model {}: {}", o.model, loaded.summary());
  return std::move(loaded.model);
}

}  // namespace vitattn::cli
