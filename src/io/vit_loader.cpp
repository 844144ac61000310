#include "vit_loader.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "model_file.hpp"

namespace vitattn::io {
namespace {

using Shape = std::vector<std::uint64_t>;

// One checkpoint, read tensor by tensor with the file's name in every message.
class Reader {
 public:
  explicit Reader(const SafeTensors& st) : st_(st) {}
  const std::string& source() const { return st_.source(); }
  bool has(const std::string& name) const { return st_.find(name) != nullptr; }

  const Shape& shape(const std::string& name, const char* layout) const {
    const TensorInfo* t = st_.find(name);
    if (!t) throw Error(source() + ": tensor " + name + " is missing (expected " + layout + ")");
    return t->shape;
  }

  // The tensor converted straight into the matrix (allocated uninitialised: every value is
  // written once, from the file), then checked for NaN and infinity.
  Matrix matrix(const std::string& name, const Shape& expected, Eigen::Index rows, Eigen::Index cols) const {
    Matrix m(rows, cols);
    st_.read_floats(name, expected, m.data());
    require_finite(name, m.data(), m.size());
    return m;
  }

  RowVector row(const std::string& name, std::uint64_t n) const {
    RowVector v(static_cast<Eigen::Index>(n));
    st_.read_floats(name, {n}, v.data());
    require_finite(name, v.data(), v.size());
    return v;
  }
  RowVector optional_row(const std::string& name, std::uint64_t n) const {
    return has(name) ? row(name, n) : RowVector();
  }

 private:
  void require_finite(const std::string& name, const float* v, Eigen::Index n) const {
    if (Eigen::Map<const Eigen::ArrayXf>(v, n).allFinite()) return;  // one vectorised pass; the index only when needed
    for (Eigen::Index i = 0; i < n; ++i)
      if (!std::isfinite(v[i]))
        throw Error(source() + ": " + name + " holds a non-finite value at index " + std::to_string(i));
  }

  const SafeTensors& st_;
};

// "attn.qkv" → "attn.qkv.weight"; torchvision's "in_proj_" → "in_proj_weight".
std::string weight_of(const std::string& linear) { return linear + (linear.ends_with('_') ? "" : ".") + "weight"; }
std::string bias_of(const std::string& linear) { return linear + (linear.ends_with('_') ? "" : ".") + "bias"; }

std::string block_prefix(const std::string& prefix, const CheckpointFamily& f, int i) {
  std::string b = f.block;
  b.replace(b.find("{i}"), 3, std::to_string(i));
  return prefix + b;
}

bool matches(const SafeTensors& st, const CheckpointFamily& f, const std::string& prefix) {
  return st.find(prefix + f.patch_embed + ".weight") && st.find(block_prefix(prefix, f, 0) + f.block_naming.norm1 + ".weight");
}

// The timm naming is shared by timm ViT/DeiT, DINO and DINOv2, whose defaults differ.
const CheckpointFamily& refine_timm(const SafeTensors& st, const std::string& prefix) {
  if (st.find(prefix + "blocks.0.ls1.gamma") || st.find(prefix + "register_tokens") || st.find(prefix + "mask_token"))
    return *family_by_name("dinov2");
  if (!st.find(prefix + "head.weight")) return *family_by_name("dino");  // DINO releases the backbone only
  return *family_by_name("timm");
}

std::pair<const CheckpointFamily*, std::string> detect(const SafeTensors& st, const std::string& wanted) {
  if (!wanted.empty()) {
    const CheckpointFamily* f = family_by_name(wanted);
    if (!f) throw Error("unknown model family \"" + wanted + "\"");
    for (const auto& prefix : f->prefixes)
      if (matches(st, *f, prefix)) return {f, prefix};
    throw Error(st.source() + ": does not use the " + wanted + " naming (no " + f->patch_embed +
                ".weight with a first block " + block_prefix("", *f, 0) + f->block_naming.norm1 + ")");
  }
  for (const auto& f : checkpoint_families())
    for (const auto& prefix : f.prefixes)
      if (matches(st, f, prefix)) return {f.name == "timm" ? &refine_timm(st, prefix) : &f, prefix};
  throw Error(st.source() + ": neither the single-head layout (attn.q.weight) nor a ViT checkpoint vitattn knows (looked for the tensor names of: " + [] {
    std::string s;
    for (const auto& n : family_names()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + "; see models/README.md)");
}

std::optional<long> metadata_int(const SafeTensors& st, const char* key) {
  const auto it = st.metadata().find(key);
  if (it == st.metadata().end()) return std::nullopt;
  long v = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || end != it->second.data() + it->second.size())
    throw Error(st.source() + ": __metadata__." + key + " is \"" + it->second + "\", expected an integer");
  return v;
}

// "0.5" or "0.5,0.5,0.5"
std::array<float, 3> metadata_triplet(const std::string& text, const std::string& what) {
  if (text.find(',') == std::string::npos) return parse_rgb_triplet(text + "," + text + "," + text, what);
  return parse_rgb_triplet(text, what);
}

EncoderBlock read_block(const Reader& r, const CheckpointFamily& f, const std::string& bp, std::uint64_t d) {
  const BlockNaming& n = f.block_naming;
  EncoderBlock b;
  b.norm1 = {r.row(bp + n.norm1 + ".weight", d), r.row(bp + n.norm1 + ".bias", d)};
  if (n.qkv.size() == 1) {  // packed rows [Q; K; V]
    b.w_qkv = r.matrix(bp + weight_of(n.qkv[0]), {3 * d, d}, static_cast<Eigen::Index>(3 * d), static_cast<Eigen::Index>(d));
    b.b_qkv = r.optional_row(bp + bias_of(n.qkv[0]), 3 * d);
  } else {  // separate query, key, value: stacked once here, at load time
    const auto di = static_cast<Eigen::Index>(d);
    b.w_qkv.resize(3 * di, di);
    const bool biased = r.has(bp + bias_of(n.qkv[0]));
    if (biased) b.b_qkv.resize(3 * di);
    for (std::size_t j = 0; j < 3; ++j) {
      const auto row0 = static_cast<Eigen::Index>(j) * di;
      b.w_qkv.middleRows(row0, di) = r.matrix(bp + weight_of(n.qkv[j]), {d, d}, di, di);
      if (biased) b.b_qkv.segment(row0, di) = r.row(bp + bias_of(n.qkv[j]), d);
    }
  }
  b.w_proj = r.matrix(bp + weight_of(n.proj), {d, d}, static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  b.b_proj = r.optional_row(bp + bias_of(n.proj), d);
  if (!n.ls1.empty()) b.ls1 = r.optional_row(bp + n.ls1, d);
  b.norm2 = {r.row(bp + n.norm2 + ".weight", d), r.row(bp + n.norm2 + ".bias", d)};
  std::string fc1 = n.fc1, fc2 = n.fc2;
  if (!r.has(bp + weight_of(fc1)) && n.fc_alt.size() == 2) fc1 = n.fc_alt[0], fc2 = n.fc_alt[1];
  const Shape& s1 = r.shape(bp + weight_of(fc1), "[d_mlp, D]");
  if (s1.size() != 2 || s1[1] != d || s1[0] == 0 || s1[0] > (1u << 20))
    throw Error(r.source() + ": " + bp + weight_of(fc1) + " is " + shape_string(s1) + ", expected [d_mlp, " +
                std::to_string(d) + "]");
  const std::uint64_t d_mlp = s1[0];
  const auto di = static_cast<Eigen::Index>(d), dmi = static_cast<Eigen::Index>(d_mlp);
  b.w_fc1 = r.matrix(bp + weight_of(fc1), {d_mlp, d}, dmi, di);
  b.b_fc1 = r.optional_row(bp + bias_of(fc1), d_mlp);
  b.w_fc2 = r.matrix(bp + weight_of(fc2), {d, d_mlp}, di, dmi);
  b.b_fc2 = r.optional_row(bp + bias_of(fc2), d);
  if (!n.ls2.empty()) b.ls2 = r.optional_row(bp + n.ls2, d);
  return b;
}

int square_root(std::uint64_t n) {
  const auto g = static_cast<std::uint64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return g * g == n && g > 0 ? static_cast<int>(g) : -1;
}

}  // namespace

bool is_encoder_checkpoint(const SafeTensors& st) {
  // Any of the single head's own projections at the top level means the single-head layout
  // (and its loader then names whichever of them is missing).
  return !st.find("attn.q.weight") && !st.find("attn.k.weight") && !st.find("attn.v.weight");
}

LoadedVit load_vit(const SafeTensors& st, const VitOverrides& overrides) {
  const auto [family, prefix] = detect(st, overrides.family);
  const CheckpointFamily& f = *family;
  const Reader r(st);
  const std::string& src = st.source();
  LoadedVit out;
  out.family = f.name;
  out.prefix = prefix;
  VitModel& m = out.model;

  // D and P from the patch embedding, Conv2d weight [D, 3, P, P].
  const std::string patch_w = prefix + f.patch_embed + ".weight";
  const Shape& ps = r.shape(patch_w, "[D, 3, P, P]");
  if (ps.size() != 4 || ps[1] != 3 || ps[2] != ps[3] || ps[0] == 0 || ps[2] == 0 || ps[0] > (1u << 16) || ps[2] > 1024)
    throw Error(src + ": " + patch_w + " is " + shape_string(ps) + ", expected [D, 3, P, P]");
  const std::uint64_t d = ps[0], p = ps[2];
  const auto di = static_cast<Eigen::Index>(d);
  m.patch_size = static_cast<int>(p);
  m.w_patch = r.matrix(patch_w, {d, 3, p, p}, di, static_cast<Eigen::Index>(3 * p * p));
  m.b_patch = r.optional_row(prefix + f.patch_embed + ".bias", d);
  m.cls_token = r.matrix(prefix + f.cls_token, {1, 1, d}, 1, di);

  for (const auto& name : f.registers) {
    if (!r.has(prefix + name)) continue;
    const Shape& rs = r.shape(prefix + name, "[1, R, D]");
    if (rs.size() != 3 || rs[0] != 1 || rs[2] != d || rs[1] > 1024)
      throw Error(src + ": " + prefix + name + " is " + shape_string(rs) + ", expected [1, R, " + std::to_string(d) + "]");
    m.register_tokens = r.matrix(prefix + name, rs, static_cast<Eigen::Index>(rs[1]), di);
    break;
  }

  // Positions: [1, 1 + N, D] with a class position, [1, N, D] without, or [1, 1 + R + N, D]
  // with positions for the registers too (some timm models); N a square grid.
  const std::string pos = prefix + f.pos_embed;
  const Shape& pe = r.shape(pos, "[1, 1+N, D]");
  if (pe.size() != 3 || pe[0] != 1 || pe[2] != d || pe[1] == 0 || pe[1] > (1u << 20))
    throw Error(src + ": " + pos + " is " + shape_string(pe) + ", expected [1, 1+N, " + std::to_string(d) + "]");
  const auto registers = static_cast<std::uint64_t>(m.n_registers());
  int grid = -1;
  for (const std::uint64_t leading : {std::uint64_t{1}, std::uint64_t{0}, 1 + registers}) {
    if (pe[1] <= leading || (grid = square_root(pe[1] - leading)) < 0) continue;
    m.pos_prefix = static_cast<int>(leading);
    break;
  }
  if (grid < 0)
    throw Error(src + ": " + pos + " has " + std::to_string(pe[1]) + " positions, which is neither N nor 1 + N" +
                (registers ? " nor 1 + " + std::to_string(registers) + " + N" : std::string()) +
                " for a square grid of N patches");
  m.grid_h = m.grid_w = grid;
  m.pos_embed = r.matrix(pos, pe, static_cast<Eigen::Index>(pe[1]), di);

  for (int i = 0; r.has(block_prefix(prefix, f, i) + f.block_naming.norm1 + ".weight"); ++i)
    m.blocks.push_back(read_block(r, f, block_prefix(prefix, f, i), d));

  if (!f.final_norm.empty() && r.has(prefix + f.final_norm + ".weight"))
    m.final_norm = {r.row(prefix + f.final_norm + ".weight", d), r.row(prefix + f.final_norm + ".bias", d)};
  // The classifier sits outside the backbone prefix in Hugging Face files ("classifier.*").
  for (const std::string& hp : {prefix, std::string()}) {
    if (f.head.empty() || !r.has(hp + f.head + ".weight")) continue;
    const Shape& hs = r.shape(hp + f.head + ".weight", "[n_classes, D]");
    if (hs.size() == 2 && hs[1] == d && hs[0] > 0) {  // anything else (e.g. a 2·D head) is not a class-token head
      m.w_head = r.matrix(hp + f.head + ".weight", hs, static_cast<Eigen::Index>(hs[0]), di);
      m.b_head = r.optional_row(hp + f.head + ".bias", hs[0]);
    }
    break;
  }

  // Heads: __metadata__, else --heads, else D/64 (every standard ViT uses 64-wide heads).
  std::optional<long> meta_heads = metadata_int(st, "num_heads");
  if (!meta_heads) meta_heads = metadata_int(st, "heads");
  if (meta_heads) {
    if (overrides.heads > 0 && overrides.heads != *meta_heads)
      throw Error(src + ": __metadata__ gives " + std::to_string(*meta_heads) + " heads, --heads says " +
                  std::to_string(overrides.heads));
    if (*meta_heads <= 0 || *meta_heads > static_cast<long>(d))
      throw Error(src + ": __metadata__ gives " + std::to_string(*meta_heads) + " heads for d_model " + std::to_string(d));
    m.n_heads = static_cast<int>(*meta_heads);
    out.heads_from = "__metadata__";
  } else if (overrides.heads > 0) {
    m.n_heads = overrides.heads;
    out.heads_from = "--heads";
  } else {
    if (d % 64 != 0)
      throw Error(src + ": d_model " + std::to_string(d) + " is not a multiple of 64 and the file does not say how many heads; give --heads");
    m.n_heads = static_cast<int>(d / 64);
    out.heads_from = "d_model / 64";
    out.heads_guessed = true;
  }

  // Defaults: the family's, then the file's own metadata, then the command line.
  m.eps = f.eps;
  m.gelu = f.gelu;
  m.norm = f.norm;
  m.pos_interp = overrides.pos_interp.value_or(f.pos_interp);
  const auto& meta = st.metadata();
  if (auto it = meta.find("layer_norm_eps"); it != meta.end()) {
    char* end = nullptr;
    const float v = std::strtof(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != '\0' || !(v > 0.0f))
      throw Error(src + ": __metadata__.layer_norm_eps is \"" + it->second + "\", expected a positive number");
    m.eps = v;
  }
  if (auto it = meta.find("gelu"); it != meta.end()) {
    if (it->second == "tanh") m.gelu = Gelu::tanh;
    else if (it->second == "erf" || it->second == "exact") m.gelu = Gelu::erf;
    else throw Error(src + ": __metadata__.gelu is \"" + it->second + "\", expected tanh or erf");
  }
  if (auto it = meta.find("mean"); it != meta.end()) m.norm.mean = metadata_triplet(it->second, src + ": __metadata__.mean");
  if (auto it = meta.find("std"); it != meta.end()) m.norm.std = metadata_triplet(it->second, src + ": __metadata__.std");
  if (overrides.eps) m.eps = *overrides.eps;
  if (overrides.gelu) m.gelu = *overrides.gelu;
  m.validate(src);
  return out;
}

const char* pos_interp_name(PosInterp p) {
  switch (p) {
    case PosInterp::bicubic: return "bicubic";
    case PosInterp::antialias: return "bicubic-antialias";
    case PosInterp::offset: return "bicubic-offset";
    case PosInterp::align_corners: return "bicubic-corners";
  }
  return "?";
}

std::optional<PosInterp> pos_interp_by_name(const std::string& name) {
  for (PosInterp p : {PosInterp::bicubic, PosInterp::antialias, PosInterp::offset, PosInterp::align_corners})
    if (name == pos_interp_name(p)) return p;
  return std::nullopt;
}

std::string LoadedVit::summary() const {
  const VitModel& m = model;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "family %s%s%s: %d layers, D=%d, %d heads (%s) of %d, P=%d, grid %dx%d%s, %d registers, "
                "LayerNorm eps %g, GELU %s, %s, classifier %s, positions resampled %s, mean %g,%g,%g std %g,%g,%g",
                family.c_str(), prefix.empty() ? "" : " prefix ", prefix.c_str(), m.n_layers(), m.d_model(), m.n_heads,
                heads_from.c_str(), m.d_head(), m.patch_size, m.grid_w, m.grid_h,
                m.pos_prefix == 1 ? "" : m.pos_prefix == 0 ? " (no class position)" : " (positions for the registers)", m.n_registers(), static_cast<double>(m.eps),
                m.gelu == Gelu::erf ? "erf" : "tanh", m.final_norm.present() ? "final norm" : "no final norm",
                m.w_head.size() ? std::to_string(m.w_head.rows()).append(" classes").c_str() : "none",
                pos_interp_name(m.pos_interp),
                static_cast<double>(m.norm.mean[0]), static_cast<double>(m.norm.mean[1]),
                static_cast<double>(m.norm.mean[2]), static_cast<double>(m.norm.std[0]),
                static_cast<double>(m.norm.std[1]), static_cast<double>(m.norm.std[2]));
  return buf;
}

}  // namespace vitattn::io
