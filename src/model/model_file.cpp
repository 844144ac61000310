#include "model/model_file.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "tensors/safetensors.hpp"
#include "model/vit_loader.hpp"

namespace vitattn::io {
namespace {

std::string format_triplet(const std::array<float, 3>& v) {
  std::string s;
  for (std::size_t i = 0; i < 3; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));  // round-trips a float exactly
    if (i) s += ',';
    s += buf;
  }
  return s;
}

}  // namespace

std::array<float, 3> parse_rgb_triplet(const std::string& text, const std::string& what) {
  std::array<float, 3> out{};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (std::size_t i = 0; i < 3; ++i) {
    while (p < end && *p == ' ') ++p;
    const auto [next, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc() || !std::isfinite(out[i]))
      throw Error(what + " is \"" + printable(text) + "\", expected three numbers \"r,g,b\"");
    p = next;
    while (p < end && *p == ' ') ++p;
    if (i < 2) {
      if (p == end || *p != ',') throw Error(what + " is \"" + printable(text) + "\", expected three numbers \"r,g,b\"");
      ++p;
    }
  }
  if (p != end) throw Error(what + " is \"" + printable(text) + "\", expected three numbers \"r,g,b\"");
  return out;
}

VitModel load_model(const std::filesystem::path& path) { return parse_model(read_file(path), display(path)); }

VitModel parse_model(std::vector<std::uint8_t> bytes, const std::string& source) {
  return load_vit(SafeTensors::parse(std::move(bytes), source)).model;
}

bool has_single_head_layout(const VitModel& m) {
  if (m.n_layers() != 1 || m.n_heads != 1 || m.n_registers() != 0 || m.pos_prefix != 1 || m.final_norm.present() ||
      m.w_head.size() > 0)
    return false;
  const EncoderBlock& b = m.blocks.front();
  return !b.norm1.present() && !b.projected() && !b.has_mlp();
}

std::vector<std::uint8_t> encode_model(const VitModel& m) {
  if (!has_single_head_layout(m))
    throw Error({roles::saved_model, ""},
                      "the single-head layout holds one attention-only block of one head; this model has " +
                          std::to_string(m.n_layers()) + " blocks of " + std::to_string(m.n_heads) + " heads");
  const auto d = static_cast<std::uint64_t>(m.d_model());
  const auto p = static_cast<std::uint64_t>(m.patch_size);
  const auto d_k = static_cast<std::uint64_t>(m.d_attn());
  const auto n_tokens = static_cast<std::uint64_t>(m.pos_embed.rows());
  const EncoderBlock& b = m.blocks.front();
  auto values = [](const auto& mat) { return std::vector<float>(mat.data(), mat.data() + mat.size()); };
  auto bias = [](const RowVector& v, Eigen::Index n) {  // absent biases are written as zeros
    return v.size() ? std::vector<float>(v.data(), v.data() + v.size()) : std::vector<float>(static_cast<std::size_t>(n), 0.0f);
  };
  const auto dki = static_cast<Eigen::Index>(d_k);
  const RowVector b_qkv = b.b_qkv.size() ? b.b_qkv : RowVector::Zero(3 * dki);
  // w_qkv (3·d_k, D) = [W_Q; W_K; W_V]: each its own tensor, as the layout has them
  const std::vector<NamedTensor> tensors = {
      {"patch_embed.proj.weight", {d, 3, p, p}, values(m.w_patch)},
      {"patch_embed.proj.bias", {d}, bias(m.b_patch, static_cast<Eigen::Index>(d))},
      {"cls_token", {1, 1, d}, values(m.cls_token)},
      {"pos_embed", {1, n_tokens, d}, values(m.pos_embed)},
      {"attn.q.weight", {d_k, d}, values(Matrix(b.w_qkv.topRows(dki)))},
      {"attn.q.bias", {d_k}, values(RowVector(b_qkv.segment(0, dki)))},
      {"attn.k.weight", {d_k, d}, values(Matrix(b.w_qkv.middleRows(dki, dki)))},
      {"attn.k.bias", {d_k}, values(RowVector(b_qkv.segment(dki, dki)))},
      {"attn.v.weight", {d_k, d}, values(Matrix(b.w_qkv.bottomRows(dki)))},
      {"attn.v.bias", {d_k}, values(RowVector(b_qkv.segment(2 * dki, dki)))},
  };
  return encode_safetensors(tensors, {{"format", "vitattn-single-head"},
                                      {"mean", format_triplet(m.norm.mean)},
                                      {"std", format_triplet(m.norm.std)}});
}

void save_model(const std::filesystem::path& path, const VitModel& m) {
  const auto bytes = encode_model(m);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::io
