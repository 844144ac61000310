#include "forward_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "tensors/npy.hpp"
#include "pipeline/threads.hpp"
#include "model_setup.hpp"
#include "pipeline/output_folders.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;
namespace {

// One .npy of [3, H, W] or [N, 3, H, W] → N images.
std::vector<ImageTensor> read_inputs(const fs::path& path, int patch_size) {
  const io::NpyArray a = io::read_npy(path);
  std::vector<std::uint64_t> s = a.shape;
  if (s.size() == 3) s.insert(s.begin(), 1);
  if (s.size() != 4 || s[1] != 3 || s[0] == 0 || s[2] == 0 || s[3] == 0 || s[2] % static_cast<std::uint64_t>(patch_size) ||
      s[3] % static_cast<std::uint64_t>(patch_size) || s[2] * s[3] > 4096ull * 4096ull)
    throw Error(fmt::format("{}: expected [3, H, W] or [N, 3, H, W] with H and W multiples of {}", io::display(path),
                            patch_size));
  std::vector<ImageTensor> images(s[0]);
  const std::size_t per = 3 * s[2] * s[3];
  for (std::size_t n = 0; n < images.size(); ++n) {
    images[n].height = static_cast<int>(s[2]);
    images[n].width = static_cast<int>(s[3]);
    images[n].chw.assign(a.values.begin() + static_cast<std::ptrdiff_t>(n * per),
                         a.values.begin() + static_cast<std::ptrdiff_t>((n + 1) * per));
    for (float v : images[n].chw)
      if (!std::isfinite(v)) throw Error(fmt::format("{}: holds a non-finite value", io::display(path)));
  }
  return images;
}

// What forward writes for one input, in one place: attention, features, logits (the last
// only when the model has a classifier).
struct ForwardOutputs {
  fs::path attention, features, logits;
};
ForwardOutputs forward_outputs(const fs::path& out, const fs::path& input) {
  const std::string stem = input.stem().string();
  return {out / (stem + "_attention.npy"), out / (stem + "_features.npy"), out / (stem + "_logits.npy")};
}

// Before any work: no output replaces an input (a tensor, the model) or another input's output.
void check_forward_outputs(const ForwardCommandOptions& o) {
  const auto key = [](const fs::path& p) {
    std::error_code ec;
    return fs::weakly_canonical(fs::absolute(p, ec), ec);
  };
  std::map<fs::path, std::string> inputs{{key(o.model.file), "the --model file"}};
  for (const auto& in : o.tensors) inputs.emplace(key(in), "an input");
  std::map<fs::path, std::string> written;  // output → the input it belongs to
  for (const auto& in : o.tensors) {
    const ForwardOutputs f = forward_outputs(o.output, in);
    for (const fs::path& p : {f.attention, f.features, f.logits}) {
      const fs::path k = key(p);
      if (const auto it = inputs.find(k); it != inputs.end())
        throw Error(fmt::format("{}: its output {} would replace {}; nothing written", io::display(in), io::display(p),
                                it->second));
      if (const auto [it, fresh] = written.emplace(k, in); !fresh && key(it->second) != key(in))
        throw Error(fmt::format("{} and {} both write {}; give them different names or run them apart", io::display(in),
                                it->second, io::display(p)));
    }
  }
}

void forward_file(const VitModel& model, const fs::path& input, const fs::path& out, bool scale) {
  const std::vector<ImageTensor> images = read_inputs(input, model.patch_size);
  std::vector<float> attention, features, logits;
  std::uint64_t n_tokens = 0, width = 0;
  for (const ImageTensor& x : images) {
    ForwardOptions fo;
    fo.keep_from_layer = 0;
    fo.scale = scale;
    const ForwardResult r = forward(model, x, fo);
    n_tokens = static_cast<std::uint64_t>(r.tokens.rows());
    width = static_cast<std::uint64_t>(r.tokens.cols());  // d_model, or d_attn after an attention-only block
    for (const auto& layer : r.attention)
      for (const Matrix& a : layer) attention.insert(attention.end(), a.data(), a.data() + a.size());
    features.insert(features.end(), r.tokens.data(), r.tokens.data() + r.tokens.cols());  // row 0: class token
    logits.insert(logits.end(), r.logits.data(), r.logits.data() + r.logits.size());
  }
  const auto n = static_cast<std::uint64_t>(images.size());
  const ForwardOutputs f = forward_outputs(out, input);
  io::write_npy(f.attention, attention.data(),
                {n, static_cast<std::uint64_t>(model.n_layers()), static_cast<std::uint64_t>(model.n_heads), n_tokens, n_tokens});
  io::write_npy(f.features, features.data(), {n, width});
  if (model.w_head.size() > 0)
    io::write_npy(f.logits, logits.data(), {n, static_cast<std::uint64_t>(model.w_head.rows())});
  spdlog::info("{}: {} input{} → {}", io::display(input), n, n == 1 ? "" : "s",
               io::display(out / (input.stem().string() + "_*.npy")));
}

}  // namespace

int run_forward(const ForwardCommandOptions& o, int verbosity) {
  check_forward_outputs(o);
  const VitModel model = make_model(o.model, verbosity);  // `forward` needs --model (check_forward)
  pipeline::prepare_output_folder(o.output);
  pipeline::set_library_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  int failed = 0;
  for (const auto& input : o.tensors) {
    try {
      forward_file(model, input, o.output, !o.no_scale);
    } catch (const Error& e) {
      spdlog::error("{}", e.what());
      ++failed;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace vitattn::cli
