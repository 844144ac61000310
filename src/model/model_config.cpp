#include "model/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::model {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

std::optional<json> read_json(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  const std::vector<std::uint8_t> bytes = files::read_file(path, 16u << 20);
  try {
    json j = json::parse(bytes.begin(), bytes.end());
    if (!j.is_object()) throw Error(files::display(path) + ": not a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", files::display(path), files::printable(e.what(), true)));
  }
}

int positive_int(const json& j, const char* key, const fs::path& file, int max) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<long long>() <= 0 || it->get<long long>() > max)
    throw Error(fmt::format("{}: {} is {}, expected an integer 1…{}", files::display(file), key, files::printable(it->dump(), true), max));
  return it->get<int>();
}

// [r, g, b] (or one number for all three), each finite, std > 0.
std::optional<std::array<float, 3>> triplet(const json& j, const char* key, const fs::path& file, bool positive) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  std::array<float, 3> v{};
  const auto bad = [&] {
    return Error(fmt::format("{}: {} is {}, expected three numbers{}", files::display(file), key, files::printable(it->dump(), true),
                             positive ? " above 0" : ""));
  };
  if (it->is_number()) {
    v.fill(it->get<float>());
  } else if (it->is_array() && it->size() == 3 && std::all_of(it->begin(), it->end(), [](const json& x) { return x.is_number(); })) {
    for (std::size_t i = 0; i < 3; ++i) v[i] = (*it)[i].get<float>();
  } else {
    throw bad();
  }
  for (const float x : v)
    if (!std::isfinite(x) || (positive && !(x > 0))) throw bad();
  return v;
}

// hidden_act: transformers' ACT2FN names of the activations vitattn computes.
std::optional<Gelu> activation(const json& c, const fs::path& file) {
  const auto it = c.find("hidden_act");
  if (it == c.end() || it->is_null()) return std::nullopt;
  const std::string name = it->is_string() ? it->get<std::string>() : std::string();
  if (name == "gelu") return Gelu::erf;
  if (name == "quick_gelu") return Gelu::quick;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Gelu::tanh;
  throw Error(fmt::format("{}: hidden_act is {}, expected gelu, quick_gelu, gelu_pytorch_tanh or gelu_new", files::display(file),
                          files::printable(it->dump(), true)));
}

// layer_norm_eps, in (0, 1).
std::optional<float> layer_norm_eps(const json& c, const fs::path& file) {
  const auto it = c.find("layer_norm_eps");
  if (it == c.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() >= 1)
    throw Error(fmt::format("{}: layer_norm_eps is {}, expected a number in (0, 1)", files::display(file), files::printable(it->dump(), true)));
  return it->get<float>();
}

// A vision-language config's "text_config": the text tower's heads, activation and ε.
void read_text_config(const json& text, const fs::path& file, ModelConfig& out) {
  out.text_heads = positive_int(text, "num_attention_heads", file, 4096);
  out.text_activation = activation(text, file);
  out.text_eps = layer_norm_eps(text, file);
}

void read_config(const json& top, const fs::path& file, ModelConfig& out) {
  if (const auto type = top.find("model_type"); type != top.end() && type->is_string()) out.model_type = type->get<std::string>();
  const auto vision = top.find("vision_config");
  const json& c = vision != top.end() && vision->is_object() ? *vision : top;
  out.projection_dim = positive_int(top, "projection_dim", file, 1 << 16);
  if (const auto text = top.find("text_config"); text != top.end() && text->is_object()) read_text_config(*text, file, out);
  out.activation = activation(c, file);
  out.heads = positive_int(c, "num_attention_heads", file, 4096);
  out.image_size = positive_int(c, "image_size", file, 1 << 16);
  out.patch_size = positive_int(c, "patch_size", file, 1024);
  out.hidden_size = positive_int(c, "hidden_size", file, 1 << 16);
  out.layers = positive_int(c, "num_hidden_layers", file, 4096);
  out.intermediate_size = positive_int(c, "intermediate_size", file, 1 << 20);
  out.eps = layer_norm_eps(c, file);
  if (const auto it = c.find("rope_theta"); it != c.end() && !it->is_null()) {  // HF DINOv3ViTConfig
    if (!it->is_number() || !(it->get<double>() > 1) || it->get<double>() > 1e9)
      throw Error(fmt::format("{}: rope_theta is {}, expected a number above 1", files::display(file), files::printable(it->dump(), true)));
    out.rope_theta = it->get<float>();
  }
  // timm: {"architecture": …, "model_args": {"num_heads": …}, "pretrained_cfg": {"input_size": [3, H, W], "mean", "std"}}
  if (const auto args = c.find("model_args"); args != c.end() && args->is_object() && !out.heads)
    out.heads = positive_int(*args, "num_heads", file, 4096);
  if (const auto pc = c.find("pretrained_cfg"); pc != c.end() && pc->is_object()) {
    out.mean = triplet(*pc, "mean", file, false);
    out.std = triplet(*pc, "std", file, true);
    if (const auto in = pc->find("input_size"); in != pc->end() && in->is_array() && in->size() == 3 && (*in)[1].is_number_integer())
      out.image_size = (*in)[1].get<int>();
  }
}

void read_preprocessor(const json& p, const fs::path& file, ModelConfig& out) {
  if (auto m = triplet(p, "image_mean", file, false)) out.mean = m;
  if (auto s = triplet(p, "image_std", file, true)) out.std = s;
}

}  // namespace

std::vector<fs::path> model_config_files(const fs::path& dir) {
  return {dir / "config.json", dir / "preprocessor_config.json"};
}

ModelConfig read_model_config(const fs::path& dir) {
  ModelConfig out;
  const std::vector<fs::path> files = model_config_files(dir);
  const fs::path &config = files[0], &preprocessor = files[1];
  if (const auto c = read_json(config)) {
    read_config(*c, config, out);
    out.sources = files::display(config);
    out.config_json = config;
  }
  if (const auto p = read_json(preprocessor)) {
    read_preprocessor(*p, preprocessor, out);
    out.sources += (out.sources.empty() ? "" : ", ") + files::display(preprocessor);
  }
  return out;
}

}  // namespace vitattn::model
