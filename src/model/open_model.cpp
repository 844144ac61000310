#include "model/open_model.hpp"

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "files/mapped_file.hpp"
#include "model/model_config.hpp"
#include "tensors/tensor_file.hpp"

namespace vitattn::model {
namespace fs = std::filesystem;
namespace {

std::string triplet_text(const std::array<float, 3>& v) {
  return fmt::format("{},{},{}", v[0], v[1], v[2]);
}

// The request's normalisation over whatever the model had, and the -v line saying what is used.
void apply_normalization(const ModelRequest& r, Normalization& norm, std::vector<std::string>& details) {
  if (r.mean) norm.mean = *r.mean;
  if (r.std) norm.std = *r.std;
  details.push_back(fmt::format("normalisation mean {} std {}", triplet_text(norm.mean), triplet_text(norm.std)));
}

OpenedModel open_seeded(const ModelRequest& r) {
  OpenedModel out;
  out.model = make_seeded_model(r.shape, r.seed);
  const VitModel& m = out.model;
  out.details.push_back(fmt::format("seeded model (seed {}, untrained): S={} P={} D={} d_k={}", r.seed,
                                    m.grid_h * m.patch_size, m.patch_size, m.d_model(), m.d_head()));
  apply_normalization(r, out.model.norm, out.details);
  out.model.validate("seeded model");  // made here, not read: its values are checked too
  return out;
}

// The hub's file when the source is a hub name, else the source as a path.
fs::path weights_file(const ModelRequest& r) {
  if (r.hub)
    if (std::optional<fs::path> local = r.hub(r.source)) return *local;
  return fs::path(r.source);
}

// The request's head count, else the file's, else the config's (check_head_counts says where
// they differ); the file's eps, else the config's; then the request's.
VitOverrides merged_overrides(const VitOverrides& asked, const ModelConfig& config, bool file_has_heads) {
  VitOverrides o = asked;
  if (o.heads == 0 && !file_has_heads) o.heads = config.heads;
  if (!o.eps && config.eps) o.eps = config.eps;
  if (!o.gelu && config.activation) o.gelu = config.activation;
  if (!o.rope_base && config.rope_theta) o.rope_base = config.rope_theta;
  if (const CheckpointFamily* f = family_by_model_type(config.model_type)) o.family_hint = f->name;
  return o;
}

// The file's head count against its config.json's: two different models, an error. The
// request's over either: said back, the request wins.
std::optional<HeadsOverridden> check_head_counts(const tensors::TensorFile& st, const ModelConfig& config, const std::string& name,
                                                 int asked) {
  const std::optional<long> file = metadata_heads(st);
  if (file && config.heads > 0 && *file != config.heads)
    throw Error(fmt::format("{}: its __metadata__ gives {} heads, {} gives {}", name, *file, files::display(config.config_json),
                            config.heads));
  if (asked <= 0) return std::nullopt;
  if (file && *file != asked) return HeadsOverridden{asked, static_cast<int>(*file), "the file's __metadata__"};
  if (config.heads > 0 && config.heads != asked) return HeadsOverridden{asked, config.heads, files::display(config.config_json)};
  return std::nullopt;
}

// The config's sizes against the file's: a config.json of another model is not used.
void check_config_sizes(const ModelConfig& config, const VitModel& m, const std::string& name) {
  const auto differ = [&](const char* key, int said, int has, const std::string& has_text) {
    if (said > 0 && said != has)
      throw Error(fmt::format("{}: {} says {} {}, the file's model has {}", name, files::display(config.config_json), key, said,
                              has_text));
  };
  differ("hidden_size", config.hidden_size, m.d_model(), fmt::format("D = {}", m.d_model()));
  differ("num_hidden_layers", config.layers, m.n_layers(), fmt::format("{} blocks", m.n_layers()));
  if (m.w_embed.size() > 0)  // (d_embed, d_model)
    differ("projection_dim", config.projection_dim, static_cast<int>(m.w_embed.rows()),
           fmt::format("an image embedding {} wide", m.w_embed.rows()));
  if (!m.blocks.empty() && m.blocks.front().has_mlp()) {
    const auto d_mlp = static_cast<int>(m.blocks.front().w_fc1.rows());
    differ("intermediate_size", config.intermediate_size, d_mlp, fmt::format("an MLP {} wide", d_mlp));
  }
}

// "a, b, … and N more", for -v.
std::string some_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 20;
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) s += (i ? ", " : "") + files::printable(names[i]);
  if (names.size() > kShown) s += fmt::format(" and {} more", names.size() - kShown);
  return s;
}

// For VitModel::weights_lost: a mapped file's weights are read in place by every forward, and
// another program may cut the file short meanwhile (mapped_file.hpp).
std::function<std::string()> weights_lost(const tensors::TensorFile& st) {
  if (!st.mapping()) return {};  // in memory: nothing can take the values away
  return [map = st.mapping(), source = st.source()]() -> std::string {
    if (!map->lost()) return {};
    return source + ": the model file was cut short while the run was reading its weights (another program "
                    "truncated or rewrote it?); nothing is drawn from it from here on";
  };
}

// The text tower beside the image tower (text_tower_loader.hpp), with config.json's text_config's
// ε and GELU, else the image tower's (the family's, the file's and the config's, already in); its
// tensors, when read, are no longer "outside the encoder". Said for -v either way.
void read_text_tower(const tensors::TensorFile& st, const ModelConfig& config, LoadedVit& loaded, OpenedModel& out) {
  out.text = load_text_tower(st, loaded.family, loaded.prefix,
                             TextSettings{.heads = config.text_heads,
                                          .eps = config.text_eps.value_or(loaded.model.eps),
                                          .gelu = config.text_activation.value_or(loaded.model.gelu)});
  if (out.text.tower.present()) {
    const std::set<std::string> read(out.text.tensors.begin(), out.text.tensors.end());
    std::erase_if(loaded.outside, [&](const std::string& name) { return read.count(name) > 0; });
    out.details.push_back(fmt::format("text tower ({} names): {} layers, W={}, {} heads ({}), context {}, embedding {}",
                                      out.text.naming, out.text.tower.n_layers(), out.text.tower.width(),
                                      out.text.tower.n_heads, out.text.heads_from, out.text.tower.context(),
                                      out.text.tower.d_embed()));
  } else if (!out.text.naming.empty()) {
    out.details.push_back("text tower not read: " + out.text.missing);
  }
}

// Where the config files beside the weights are, and what they said; none for bytes in memory.
struct Beside {
  ModelConfig config;
  fs::path config_json;  // for class labels; empty: none
};

// Every step after the tensor file is read, shared by the file and the bytes: load, the config's
// checks and normalisation, the request's normalisation, validation once, labels.
OpenedModel open_tensors(const tensors::TensorFile& st, const Beside& beside, const std::string& name, const ModelRequest& r) {
  const ModelConfig& config = beside.config;
  OpenedModel out;
  if (!config.sources.empty()) out.details.push_back("settings from " + config.sources);
  out.heads_overridden = check_head_counts(st, config, name, r.overrides.heads);
  LoadedVit loaded = load_vit(st, merged_overrides(r.overrides, config, metadata_heads(st).has_value()));
  if (loaded.heads_guessed) out.heads_guessed = HeadsGuessed{loaded.model.n_heads, static_cast<int>(loaded.model.d_model())};
  if (r.overrides.heads == 0 && config.heads > 0 && !metadata_heads(st)) loaded.heads_from = config.sources;
  check_config_sizes(config, loaded.model, name);
  if (r.text_tower) read_text_tower(st, config, loaded, out);
  if (!loaded.outside.empty())
    out.details.push_back("tensors outside the encoder, not read: " + some_names(loaded.outside));
  if (config.patch_size > 0 && config.patch_size != loaded.model.patch_size)
    throw Error(fmt::format("{}: its config says patch_size {}, its patch embedding has {}", name, config.patch_size,
                            loaded.model.patch_size));
  // A RoPE model has no table to give its grid: the config's image_size is the default input.
  if (loaded.model.rope.present() && config.image_size > 0 && config.image_size % loaded.model.patch_size == 0)
    loaded.model.grid_h = loaded.model.grid_w = config.image_size / loaded.model.patch_size;
  if (config.mean) loaded.model.norm.mean = *config.mean;
  if (config.std) loaded.model.norm.std = *config.std;
  apply_normalization(r, loaded.model.norm, out.details);
  // Once, with every setting in. The values were checked as each tensor was read (vit_loader.cpp).
  loaded.model.validate(st.source(), VitModel::CheckValues::no);
  out.details.push_back(fmt::format("model {}: {}", name, loaded.summary()));
  if (const CheckpointFamily* f = family_by_name(loaded.family); f && !f->note.empty())
    out.details.push_back(fmt::format("{}: {}", f->name, f->note));
  if (loaded.model.w_embed.size() > 0)
    out.details.push_back(fmt::format("image embedding: {} wide (forward writes it as _embedding.npy)",
                                      loaded.model.w_embed.rows()));
  if (r.labels && loaded.model.has_classifier()) {
    out.labels = find_class_labels(st.metadata(), name, beside.config_json, loaded.model.n_classes());
    out.details.push_back("class names: " + (out.labels.source.empty() ? std::string("none (indices)") : out.labels.source));
  }
  out.model = std::move(loaded.model);
  out.model.weights_lost = weights_lost(st);
  return out;
}

}  // namespace

OpenedModel open_model(const ModelRequest& r) {
  if (r.source.empty()) return open_seeded(r);
  const fs::path path = weights_file(r);
  const tensors::TensorFile st = tensors::load_tensor_file(path, r.key);
  // config.json / preprocessor_config.json beside the weights (a hub snapshot folder).
  const Beside beside{read_model_config(path.parent_path()), path.parent_path() / "config.json"};
  OpenedModel out = open_tensors(st, beside, r.source, r);
  out.file = path;
  return out;
}

OpenedModel open_model_bytes(std::vector<std::uint8_t> bytes, const std::string& name, const ModelRequest& r) {
  const tensors::TensorFile st = tensors::parse_tensor_file(std::move(bytes), name, r.key);
  return open_tensors(st, Beside{}, name, r);
}

}  // namespace vitattn::model
