#include "model/single_head_layout.hpp"

#include <string>

#include "core/error.hpp"
#include "files/file_io.hpp"
#include "model/rgb_triplet.hpp"
#include "tensors/safetensors.hpp"

namespace vitattn::model {

bool has_single_head_layout(const VitModel& m) {
  if (m.n_layers() != 1 || m.n_heads != 1 || m.n_registers() != 0 || m.has_dist() || m.pos_prefix != 1 || m.final_norm.present() ||
      m.has_classifier())
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
  const std::vector<tensors::NamedTensor> tensors = {
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
  return tensors::encode_safetensors(tensors, {{"format", "vitattn-single-head"},
                                      {"mean", format_rgb_triplet(m.norm.mean)},
                                      {"std", format_rgb_triplet(m.norm.std)}});
}

void save_model(const std::filesystem::path& path, const VitModel& m) {
  const auto bytes = encode_model(m);
  files::write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::model
