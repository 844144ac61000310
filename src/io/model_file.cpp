#include "model_file.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "file_io.hpp"
#include "safetensors.hpp"

namespace vitattn::io {
namespace {

using Shape = std::vector<std::uint64_t>;

Matrix to_matrix(const std::vector<float>& v, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const Matrix>(v.data(), rows, cols);
}

RowVector to_row(const std::vector<float>& v) {
  return Eigen::Map<const RowVector>(v.data(), static_cast<Eigen::Index>(v.size()));
}

void require_finite(const std::string& source, const std::string& name, const std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw Error(source + ": " + name + " holds a non-finite value (" + std::to_string(v[i]) + " at index " +
                  std::to_string(i) + ")");
}

// Size of dimension `dim` of a tensor that must exist with `rank` dimensions.
std::uint64_t dim_of(const SafeTensors& st, const std::string& name, std::size_t rank, std::size_t dim,
                     const char* layout) {
  const TensorInfo* t = st.find(name);
  if (!t) throw Error(st.source() + ": tensor " + name + " is missing (expected " + layout + ")");
  if (t->shape.size() != rank)
    throw Error(st.source() + ": " + name + " is " + shape_string(t->shape) + ", expected " + layout);
  return t->shape[dim];
}

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

SingleHeadModel load_model(const std::filesystem::path& path) { return parse_model(read_file(path), display(path)); }

SingleHeadModel parse_model(std::vector<std::uint8_t> bytes, const std::string& source) {
  return load_model(SafeTensors::parse(std::move(bytes), source));
}

SingleHeadModel load_model(const SafeTensors& st) {
  const std::string& src = st.source();

  // Shapes come from the tensors themselves: D and P from the patch embedding,
  // d_k from the query weight, N from the position embeddings.
  const std::uint64_t d = dim_of(st, "patch_embed.proj.weight", 4, 0, "[D, 3, P, P]");
  const std::uint64_t p = dim_of(st, "patch_embed.proj.weight", 4, 2, "[D, 3, P, P]");
  const std::uint64_t d_k = dim_of(st, "attn.q.weight", 2, 0, "[d_k, D]");
  const std::uint64_t n_tokens = dim_of(st, "pos_embed", 3, 1, "[1, 1+N, D]");
  if (p == 0 || d == 0 || d_k == 0 || n_tokens < 2)
    throw Error(src + ": empty model (D=" + std::to_string(d) + ", P=" + std::to_string(p) +
                ", d_k=" + std::to_string(d_k) + ", tokens=" + std::to_string(n_tokens) + ")");
  if (p > 4096 || d > (1u << 20) || d_k > (1u << 20) || n_tokens > (1u << 24))
    throw Error(src + ": implausible model size (D=" + std::to_string(d) + ", P=" + std::to_string(p) + ")");

  auto get = [&](const std::string& name, const Shape& shape) {
    auto v = st.floats(name, shape);
    require_finite(src, name, v);
    return v;
  };
  auto get_bias = [&](const std::string& name, std::uint64_t n) {
    if (!st.find(name)) return std::vector<float>(n, 0.0f);  // optional: zero when absent
    return get(name, {n});
  };
  const auto di = static_cast<Eigen::Index>(d);
  const auto dki = static_cast<Eigen::Index>(d_k);

  SingleHeadModel m;
  m.patch_size = static_cast<int>(p);
  m.w_patch = to_matrix(get("patch_embed.proj.weight", {d, 3, p, p}), di, static_cast<Eigen::Index>(3 * p * p));
  m.b_patch = to_row(get_bias("patch_embed.proj.bias", d));
  m.cls_token = to_row(get("cls_token", {1, 1, d}));
  m.pos_embed = to_matrix(get("pos_embed", {1, n_tokens, d}), static_cast<Eigen::Index>(n_tokens), di);
  m.w_q = to_matrix(get("attn.q.weight", {d_k, d}), dki, di);
  m.w_k = to_matrix(get("attn.k.weight", {d_k, d}), dki, di);
  m.w_v = to_matrix(get("attn.v.weight", {d_k, d}), dki, di);
  m.b_q = to_row(get_bias("attn.q.bias", d_k));
  m.b_k = to_row(get_bias("attn.k.bias", d_k));
  m.b_v = to_row(get_bias("attn.v.bias", d_k));

  const auto& meta = st.metadata();
  if (auto it = meta.find("mean"); it != meta.end()) m.norm.mean = parse_rgb_triplet(it->second, src + ": __metadata__.mean");
  if (auto it = meta.find("std"); it != meta.end()) m.norm.std = parse_rgb_triplet(it->second, src + ": __metadata__.std");
  m.validate(src);
  return m;
}

std::vector<std::uint8_t> encode_model(const SingleHeadModel& m) {
  const auto d = static_cast<std::uint64_t>(m.d_model());
  const auto p = static_cast<std::uint64_t>(m.patch_size);
  const auto d_k = static_cast<std::uint64_t>(m.d_k());
  const auto n_tokens = static_cast<std::uint64_t>(m.pos_embed.rows());
  auto values = [](const auto& mat) { return std::vector<float>(mat.data(), mat.data() + mat.size()); };
  const std::vector<NamedTensor> tensors = {
      {"patch_embed.proj.weight", {d, 3, p, p}, values(m.w_patch)},
      {"patch_embed.proj.bias", {d}, values(m.b_patch)},
      {"cls_token", {1, 1, d}, values(m.cls_token)},
      {"pos_embed", {1, n_tokens, d}, values(m.pos_embed)},
      {"attn.q.weight", {d_k, d}, values(m.w_q)},
      {"attn.q.bias", {d_k}, values(m.b_q)},
      {"attn.k.weight", {d_k, d}, values(m.w_k)},
      {"attn.k.bias", {d_k}, values(m.b_k)},
      {"attn.v.weight", {d_k, d}, values(m.w_v)},
      {"attn.v.bias", {d_k}, values(m.b_v)},
  };
  return encode_safetensors(tensors, {{"format", "vitattn-single-head"},
                                      {"mean", format_triplet(m.norm.mean)},
                                      {"std", format_triplet(m.norm.std)}});
}

void save_model(const std::filesystem::path& path, const SingleHeadModel& m) {
  const auto bytes = encode_model(m);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace vitattn::io
