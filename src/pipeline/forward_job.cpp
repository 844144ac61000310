#include "pipeline/forward_job.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "pipeline/output_guard.hpp"
#include "tensors/npy.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t kMaxPixels = 4096ull * 4096ull;  // per image of an input

// One .npy of [3, H, W] or [N, 3, H, W] → N images, H and W multiples of the patch size.
std::vector<ImageTensor> read_inputs(const fs::path& path, int patch_size) {
  const io::NpyArray a = io::read_npy(path);
  std::vector<std::uint64_t> s = a.shape;
  if (s.size() == 3) s.insert(s.begin(), 1);
  const auto p = static_cast<std::uint64_t>(patch_size);
  if (s.size() != 4 || s[1] != 3 || s[0] == 0 || s[2] == 0 || s[3] == 0 || s[2] % p || s[3] % p || s[2] * s[3] > kMaxPixels)
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

// The arrays of one input, each image's rows after the last one's.
struct Arrays {
  std::vector<float> attention, features, logits;
  std::uint64_t n_tokens = 0, width = 0;
};

void add_image(const VitModel& model, const ImageTensor& x, bool scale, Arrays& out) {
  ForwardOptions fo;
  fo.keep_from_layer = 0;
  fo.scale = scale;
  const ForwardResult r = forward(model, x, fo);
  out.n_tokens = static_cast<std::uint64_t>(r.tokens.rows());
  out.width = static_cast<std::uint64_t>(r.tokens.cols());  // d_model, or d_attn after an attention-only block
  for (const auto& layer : r.attention)
    for (const Matrix& a : layer) out.attention.insert(out.attention.end(), a.data(), a.data() + a.size());
  out.features.insert(out.features.end(), r.tokens.data(), r.tokens.data() + r.tokens.cols());  // row 0: class token
  out.logits.insert(out.logits.end(), r.logits.data(), r.logits.data() + r.logits.size());
}

ForwardOutputs write_arrays(const VitModel& model, const Arrays& a, std::uint64_t n, const ForwardOutputs& f) {
  const auto layers = static_cast<std::uint64_t>(model.n_layers()), heads = static_cast<std::uint64_t>(model.n_heads);
  io::write_npy(f.attention, a.attention.data(), {n, layers, heads, a.n_tokens, a.n_tokens});
  io::write_npy(f.features, a.features.data(), {n, a.width});
  if (model.w_head.size() == 0) return {f.attention, f.features, {}};
  io::write_npy(f.logits, a.logits.data(), {n, static_cast<std::uint64_t>(model.w_head.rows())});
  return f;
}

ForwardInputResult forward_file(const VitModel& model, const fs::path& input, const ForwardRequest& r) {
  const std::vector<ImageTensor> images = read_inputs(input, model.patch_size);
  Arrays arrays;
  try {
    for (const ImageTensor& x : images) add_image(model, x, r.scale, arrays);
  } catch (const Error& e) {  // the core's errors name no file (activations that became non-finite)
    if (e.subject()) throw;
    throw Error(io::display(input) + ": " + e.what());
  }
  ForwardInputResult out;
  out.input = input;
  out.images = images.size();
  out.written = write_arrays(model, arrays, images.size(), forward_outputs(r.output, input));
  return out;
}

}  // namespace

ForwardOutputs forward_outputs(const fs::path& out, const fs::path& input) {
  const std::string stem = input.stem().string();
  return {out / (stem + "_attention.npy"), out / (stem + "_features.npy"), out / (stem + "_logits.npy")};
}

void check_forward_outputs(const ForwardRequest& r) {
  std::vector<fs::path> inputs;  // each once: an input named twice writes its own files twice
  std::set<fs::path> seen;
  for (const fs::path& in : r.inputs) {
    std::error_code ec;  // two names of one file compare equal: absolute, symlinks and ".." resolved
    if (seen.insert(fs::weakly_canonical(fs::absolute(in, ec), ec)).second) inputs.push_back(in);
  }
  OutputGuard guard;
  if (!r.model_file.empty()) guard.reads(r.model_file, roles::model_file);
  for (const fs::path& in : inputs) guard.reads(in, roles::input);
  for (const fs::path& in : inputs) {
    const ForwardOutputs f = forward_outputs(r.output, in);
    for (const fs::path& p : {f.attention, f.features, f.logits}) guard.derives(p, "the output of " + io::display(in));
  }
}

std::vector<ForwardInputResult> forward_files(const VitModel& model, const ForwardRequest& r) {
  std::vector<ForwardInputResult> results;
  for (const fs::path& input : r.inputs) {
    try {
      results.push_back(forward_file(model, input, r));
    } catch (const Error& e) {
      ForwardInputResult failed;
      failed.input = input;
      failed.error = e.what();
      results.push_back(std::move(failed));
    }
  }
  return results;
}

}  // namespace vitattn::pipeline
