#include "model/vit_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "files/mapped_file.hpp"
#include "model/layout_check.hpp"
#include "model/rgb_triplet.hpp"

namespace vitattn::model {
namespace {

using Shape = std::vector<std::uint64_t>;

// One checkpoint, read tensor by tensor with the file's name in every message.
class Reader {
 public:
  explicit Reader(const tensors::TensorFile& st) : st_(st) {}
  const std::string& source() const { return st_.source(); }
  bool has(const std::string& name) const { return st_.find(name) != nullptr; }

  const Shape& shape(const std::string& name, const char* layout) const {
    const tensors::TensorInfo* t = st_.find(name);
    if (!t) throw Error(source() + ": tensor " + name + " is missing (expected " + layout + ")");
    return t->shape;
  }

  // The tensor as a (rows, cols) matrix, checked for NaN and infinity: read in place where
  // the file holds it as float32, aligned (a view of the mapping, no copy); else converted
  // straight into a matrix of its own (allocated uninitialised: every value is written once,
  // from the file). Either way its shape in the file is `expected`, its values row-major.
  WeightMatrix matrix(const std::string& name, const Shape& expected, Eigen::Index rows, Eigen::Index cols) const {
    require_present(name, expected);
    if (auto in_place = st_.floats_in_place(name, expected)) {
      require_finite(name, in_place->data, rows * cols);
      return WeightMatrix(in_place->data, rows, cols, std::move(in_place->owner));
    }
    Matrix m(rows, cols);
    st_.read_floats(name, expected, m.data());
    require_finite(name, m.data(), m.size());
    return m;
  }

  RowVector row(const std::string& name, std::uint64_t n) const {
    require_present(name, {n});
    RowVector v(static_cast<Eigen::Index>(n));
    st_.read_floats(name, {n}, v.data());
    require_finite(name, v.data(), v.size());
    return v;
  }
  RowVector optional_row(const std::string& name, std::uint64_t n) const {
    return has(name) ? row(name, n) : RowVector();
  }

 private:
  void require_present(const std::string& name, const Shape& expected) const {
    if (!has(name)) throw Error(source() + ": tensor " + name + " is missing (expected " + tensors::shape_string(expected) + ")");
  }

  // One vectorised pass, the index only when needed. In place, this is the first read of the
  // tensor's pages of the mapping: guarded, so a file cut short under us is an Error here.
  void require_finite(const std::string& name, const float* v, Eigen::Index n) const {
    struct Scan {
      const float* v;
      Eigen::Index n, bad = -1;  // the first non-finite value's index, or -1
      float value = 0.0f;
    } scan{v, n};
    const bool read = files::MappedFile::guarded([](void* context) {
      auto& s = *static_cast<Scan*>(context);
      if (Eigen::Map<const Eigen::ArrayXf>(s.v, s.n).allFinite()) return;
      for (s.bad = 0; std::isfinite(s.v[s.bad]); ++s.bad) {}
      s.value = s.v[s.bad];
    }, &scan);
    if (!read) throw Error(source() + ": the file shrank while it was being read (another program truncated it?)");
    if (scan.bad >= 0)
      throw Error(source() + ": " + name + " holds a non-finite value (" + std::to_string(scan.value) + " at index " +
                  std::to_string(scan.bad) + ")");
  }

  const tensors::TensorFile& st_;
};

std::string block_prefix(const std::string& prefix, const CheckpointFamily& f, int i) {
  std::string b = f.block;
  if (const auto at = b.find("{i}"); at != std::string::npos) b.replace(at, 3, std::to_string(i));
  return prefix + b;
}

// The tensors whose presence says a block is there: its first norm, or, in a block without
// one, any of its query, key and value (the reader then names whichever is missing).
std::vector<std::string> block_markers(const CheckpointFamily& f) {
  const BlockNaming& n = f.block_naming;
  if (!n.norm1.empty()) return {n.norm1 + ".weight"};
  std::vector<std::string> names;
  for (const auto& linear : n.qkv) names.push_back(weight_of(linear));
  return names;
}

bool has_block(const tensors::TensorFile& st, const CheckpointFamily& f, const std::string& prefix, int i) {
  if (i > 0 && f.block.find("{i}") == std::string::npos) return false;  // a family of one block
  for (const auto& name : block_markers(f))
    if (st.find(block_prefix(prefix, f, i) + name)) return true;
  return false;
}

// A family is recognised by its first block; the reader then names any other tensor missing.
bool matches(const tensors::TensorFile& st, const CheckpointFamily& f, const std::string& prefix) {
  if (!f.probe_head.empty() && !st.find(prefix + f.probe_head + ".probe")) return false;  // HF CLIP shares SigLIP's block names
  if (!has_block(st, f, prefix, 0)) return false;
  return std::all_of(f.detect_also.begin(), f.detect_also.end(),
                     [&](const std::string& name) { return st.find(prefix + name) != nullptr; });
}

// The timm naming is shared by timm ViT/DeiT, DINO and DINOv2, whose defaults differ.
const CheckpointFamily& refine_timm(const tensors::TensorFile& st, const std::string& prefix) {
  const CheckpointFamily& timm = *family_by_name("timm");
  if (st.find(prefix + "rope_embed.periods") || st.find(prefix + "storage_tokens")) return *family_by_name("dinov3");
  if (st.find(prefix + "dist_token")) return *family_by_name("deit-distilled");
  if (st.find(prefix + timm.norm_pre + ".weight") || st.find(prefix + timm.norm_pre + ".bias"))
    return timm;  // pre_norm=True (the CLIP towers), with a head or without
  if (st.find(prefix + "fc_norm.weight")) return timm;  // global_pool='avg'
  if (st.find(prefix + "blocks.0.ls1.gamma") || st.find(prefix + "register_tokens") || st.find(prefix + "mask_token"))
    return *family_by_name("dinov2");
  if (!st.find(prefix + "head.weight")) return *family_by_name("dino");  // DINO releases the backbone only
  return timm;
}

std::pair<const CheckpointFamily*, std::string> detect(const tensors::TensorFile& st, const std::string& wanted,
                                                       const std::string& hint) {
  if (const CheckpointFamily* f = hint.empty() || !wanted.empty() ? nullptr : family_by_name(hint))
    for (const auto& prefix : f->prefixes)
      if (matches(st, *f, prefix)) return {f, prefix};
  if (!wanted.empty()) {
    const CheckpointFamily* f = family_by_name(wanted);
    if (!f) throw Error("unknown model family \"" + wanted + "\"");
    for (const auto& prefix : f->prefixes)
      if (matches(st, *f, prefix)) return {f, prefix};
    throw Error(st.source() + ": does not use the " + wanted + " naming (no " + f->patch_embed +
                ".weight with a first block " + block_prefix("", *f, 0) + block_markers(*f).front() + ")");
  }
  for (const auto& f : checkpoint_families())
    for (const auto& prefix : f.prefixes)
      if (matches(st, f, prefix)) return {f.name == "timm" ? &refine_timm(st, prefix) : &f, prefix};
  throw Error(st.source() + ": not a model vitattn knows (looked for the tensor names of: " + [] {
    std::string s;
    for (const auto& n : family_names()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + "; see models/README.md)");
}

std::optional<long> metadata_int(const tensors::TensorFile& st, const char* key) {
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

LayerNorm read_norm(const Reader& r, const std::string& name, std::uint64_t d) {
  if (name.empty()) return {};
  return {r.row(name + ".weight", d), r.row(name + ".bias", d)};
}

// d_attn, the attention width, from the query rows: [3·d_attn, D] packed, [d_attn, D] apart.
std::uint64_t attention_width(const Reader& r, const BlockNaming& n, const std::string& bp, std::uint64_t d) {
  const std::string name = bp + weight_of(n.qkv[0]);
  const Shape& s = r.shape(name, n.qkv.size() == 1 ? "[3·D, D]" : "[d_k, D]");
  const std::uint64_t rows = s.empty() ? 0 : n.qkv.size() == 1 ? s.front() / 3 : s.front();
  // With an output projection the heads span D, as in every ViT; only an attention-only
  // block (the single-head layout) has a width of its own.
  if (!n.proj.empty() && (s.size() != 2 || s[1] != d || rows != d || (n.qkv.size() == 1 && s[0] != 3 * d)))
    throw Error(r.source() + ": " + name + " is " + tensors::shape_string(s) + ", expected " +
                tensors::shape_string({n.qkv.size() == 1 ? 3 * d : d, d}));
  if (s.size() != 2 || s[1] != d || rows == 0 || rows > (1u << 20) || (n.qkv.size() == 1 && s[0] % 3 != 0))
    throw Error(r.source() + ": " + name + " is " + tensors::shape_string(s) + ", expected [" +
                (n.qkv.size() == 1 ? std::string("3·D")
                 : s.size() == 2 && rows > 0 && rows <= (1u << 20) ? std::to_string(rows)  // its own d_k, wrong width
                                                                    : std::string("d_k")) +
                ", " + std::to_string(d) + "]");
  return rows;
}

EncoderBlock read_block(const Reader& r, const CheckpointFamily& f, const std::string& bp, std::uint64_t d) {
  const BlockNaming& n = f.block_naming;
  EncoderBlock b;
  b.norm1 = read_norm(r, n.norm1.empty() ? "" : bp + n.norm1, d);
  const std::uint64_t w = attention_width(r, n, bp, d);  // d_attn
  const auto di = static_cast<Eigen::Index>(d), wi = static_cast<Eigen::Index>(w);
  if (n.qkv.size() == 1) {  // packed rows [Q; K; V]
    b.w_qkv = r.matrix(bp + weight_of(n.qkv[0]), {3 * w, d}, 3 * wi, di);
    b.b_qkv = r.optional_row(bp + bias_of(n.qkv[0]), 3 * w);
    // DINOv3's LinearKMaskedBias: bias ⊙ bias_mask (its key third zero). It matters there: RoPE
    // rotates a key bias differently for every patch, so it no longer cancels in the softmax.
    if (!f.qkv_bias_mask.empty() && r.has(bp + f.qkv_bias_mask) && b.b_qkv.size() > 0)
      b.b_qkv.array() *= r.row(bp + f.qkv_bias_mask, 3 * w).array();
  } else {  // separate query, key, value: stacked once here, at load time (a copy)
    Matrix w_qkv(3 * wi, di);
    const bool biased = std::any_of(n.qkv.begin(), n.qkv.end(), [&](const auto& q) { return r.has(bp + bias_of(q)); });
    if (biased) b.b_qkv.resize(3 * wi);
    for (std::size_t j = 0; j < 3; ++j) {
      const auto row0 = static_cast<Eigen::Index>(j) * wi;
      w_qkv.middleRows(row0, wi) = r.matrix(bp + weight_of(n.qkv[j]), {w, d}, wi, di);
      // A bias left out of a biased q, k, v is zero (the native layout writes all three or none).
      if (biased) b.b_qkv.segment(row0, wi) = r.has(bp + bias_of(n.qkv[j])) ? r.row(bp + bias_of(n.qkv[j]), w) : RowVector::Zero(wi);
    }
    b.w_qkv = std::move(w_qkv);
  }
  if (!n.proj.empty()) {
    b.w_proj = r.matrix(bp + weight_of(n.proj), {d, w}, di, wi);
    b.b_proj = r.optional_row(bp + bias_of(n.proj), d);
  }
  if (!n.ls1.empty()) b.ls1 = r.optional_row(bp + n.ls1, d);
  if (n.fc1.empty()) return b;  // attention only
  b.norm2 = read_norm(r, bp + n.norm2, d);
  std::string fc1 = n.fc1, fc2 = n.fc2;
  if (!r.has(bp + weight_of(fc1)) && n.fc_alt.size() == 2) fc1 = n.fc_alt[0], fc2 = n.fc_alt[1];
  const Shape& s1 = r.shape(bp + weight_of(fc1), "[d_mlp, D]");
  if (s1.size() != 2 || s1[1] != d || s1[0] == 0 || s1[0] > (1u << 20))
    throw Error(r.source() + ": " + bp + weight_of(fc1) + " is " + tensors::shape_string(s1) + ", expected [d_mlp, " +
                std::to_string(d) + "]");
  const std::uint64_t d_mlp = s1[0];
  const auto dmi = static_cast<Eigen::Index>(d_mlp);
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

std::optional<long> metadata_heads(const tensors::TensorFile& st) {
  std::optional<long> heads = metadata_int(st, "num_heads");
  return heads ? heads : metadata_int(st, "heads");
}

namespace {

// The patch embedding, Conv2d weight [D, 3, P, P]: sets P, W_E, b_E and the class token;
// returns D.
std::uint64_t read_patch_embedding(const Reader& r, const CheckpointFamily& f, const std::string& prefix, VitModel& m) {
  const std::string patch_w = prefix + f.patch_embed + ".weight";
  const Shape& ps = r.shape(patch_w, "[D, 3, P, P]");
  if (ps.size() != 4 || ps[1] != 3 || ps[2] != ps[3] || ps[0] == 0 || ps[2] == 0 || ps[0] > (1u << 16) || ps[2] > 1024)
    throw Error(r.source() + ": " + patch_w + " is " + tensors::shape_string(ps) + ", expected " +
                (ps.size() == 4 && ps[1] == 3 && ps[0] > 0 && ps[2] > 0 && ps[2] != ps[3]  // patches not square
                     ? tensors::shape_string({ps[0], 3, ps[2], ps[2]})
                     : std::string("[D, 3, P, P] with D and P positive")));
  const std::uint64_t d = ps[0], p = ps[2];
  const auto di = static_cast<Eigen::Index>(d);
  m.patch_size = static_cast<int>(p);
  m.w_patch = r.matrix(patch_w, {d, 3, p, p}, di, static_cast<Eigen::Index>(3 * p * p));  // (D, 3·P·P)
  m.b_patch = r.optional_row(prefix + f.patch_embed + ".bias", d);
  if (f.cls_token.empty()) {  // none (SigLIP)
  } else if (f.flat_tokens) {
    m.cls_token = r.row(prefix + f.cls_token, d);  // [D] (CLIP)
  } else {
    m.cls_token = r.matrix(prefix + f.cls_token, {1, 1, d}, 1, di);  // (1, D)
  }
  if (!f.dist_token.empty()) m.dist_token = r.matrix(prefix + f.dist_token, {1, 1, d}, 1, di);  // (1, D)
  return d;
}

// Register tokens [1, R, D], under the first of the family's names the file has; none else.
void read_registers(const Reader& r, const CheckpointFamily& f, const std::string& prefix, std::uint64_t d, VitModel& m) {
  for (const auto& name : f.registers) {
    if (!r.has(prefix + name)) continue;
    const Shape& rs = r.shape(prefix + name, "[1, R, D]");
    if (rs.size() != 3 || rs[0] != 1 || rs[2] != d || rs[1] > 1024)
      throw Error(r.source() + ": " + prefix + name + " is " + tensors::shape_string(rs) + ", expected [1, R, " +
                  std::to_string(d) + "]");
    m.register_tokens = r.matrix(prefix + name, rs, static_cast<Eigen::Index>(rs[1]), static_cast<Eigen::Index>(d));
    return;
  }
}

// Positions: [1, 1 + N, D] with a class position, [1, N, D] without, or [1, 1 + R + N, D]
// with positions for the registers too (some timm models); N a square grid.
void read_positions(const Reader& r, const CheckpointFamily& f, const std::string& prefix, std::uint64_t d, VitModel& m) {
  if (f.rope) {  // no table: the grid is only the default input; the periods when the file has them
    m.pos_prefix = 0;
    m.grid_h = m.grid_w = f.image_size / m.patch_size;
    if (!f.rope_periods.empty() && r.has(prefix + f.rope_periods)) {
      const Shape& ps = r.shape(prefix + f.rope_periods, "[d_head/4]");
      if (ps.size() != 1 || ps[0] == 0 || ps[0] > d)
        throw Error(r.source() + ": " + prefix + f.rope_periods + " is " + tensors::shape_string(ps) + ", expected [d_head/4]");
      m.rope.periods = r.row(prefix + f.rope_periods, ps[0]);
    }
    return;
  }
  const std::string pos = prefix + f.pos_embed;
  const std::string count = f.cls_token.empty() ? "N, " : "1+N, ";  // SigLIP has no class position
  const std::string layout = f.flat_tokens ? "[" + count + "D]" : "[1, " + count + "D]";
  const Shape& stored = r.shape(pos, layout.c_str());
  // An nn.Embedding's [1 + N, D] (CLIP) or [N, D] (SigLIP) read as [1, 1 + N, D]: the same values.
  const Shape pe = f.flat_tokens && stored.size() == 2 ? Shape{1, stored[0], stored[1]} : stored;
  if (pe.size() != 3 || pe[0] != 1 || pe[2] != d || pe[1] == 0 || pe[1] > (1u << 20) ||
      (f.flat_tokens && stored.size() != 2))
    throw Error(r.source() + ": " + pos + " is " + tensors::shape_string(stored) + ", expected [" +
                (f.flat_tokens ? "" : "1, ") + count + std::to_string(d) + "]");
  const auto registers = static_cast<std::uint64_t>(m.n_registers());
  const std::uint64_t cls = m.has_dist() ? 2 : 1;  // the class (and distillation) token's positions
  int grid = -1;
  for (const std::uint64_t leading : {cls, std::uint64_t{0}, cls + registers}) {
    if (f.class_position && leading != 1) continue;
    if (f.cls_token.empty() && leading != 0) continue;  // no class token: every position is a patch's
    if (pe[1] <= leading || (grid = square_root(pe[1] - leading)) < 0) continue;
    m.pos_prefix = static_cast<int>(leading);
    break;
  }
  if (grid < 0)
    throw Error(r.source() + ": " + pos + " has " + std::to_string(pe[1]) + " positions, which is " +
                (f.class_position ? "not 1 + N" : "neither N nor " + std::to_string(cls) + " + N") +
                (registers ? " nor " + std::to_string(cls) + " + " + std::to_string(registers) + " + N" : std::string()) +
                " for a square grid of N patches");
  m.grid_h = m.grid_w = grid;
  m.pos_embed = r.matrix(pos, stored, static_cast<Eigen::Index>(pe[1]), static_cast<Eigen::Index>(d));  // (pos_prefix + N, D)
}

// The final norm, when the family has one and the file holds it, fc_norm likewise, and the
// classifier [n_classes, d_pool], which sits outside the backbone prefix in Hugging Face files
// ("classifier.*"), with a distilled model's second head beside it. They set the pooling
// (vit_head.hpp): both heads → class_and_dist; fc_norm → patch_mean; else the family's.
void read_final_norm_and_head(const Reader& r, const CheckpointFamily& f, const std::string& prefix, std::uint64_t d,
                              VitModel& m) {
  if (!f.final_norm.empty() && r.has(prefix + f.final_norm + ".weight"))
    m.final_norm = {r.row(prefix + f.final_norm + ".weight", d), r.row(prefix + f.final_norm + ".bias", d)};
  if (!f.fc_norm.empty() && r.has(prefix + f.fc_norm + ".weight")) m.fc_norm = read_norm(r, prefix + f.fc_norm, d);
  const std::uint64_t d_pool = f.head_pooling == Pooling::class_and_patch_mean ? 2 * d : d;
  for (const std::string& hp : {prefix, std::string()}) {
    if (f.head.empty() || !r.has(hp + f.head + ".weight")) continue;
    const Shape& hs = r.shape(hp + f.head + ".weight", "[n_classes, D]");
    if (hs.size() == 2 && hs[1] == d_pool && hs[0] > 0) {  // anything else is not a head of this pooling
      m.w_head = r.matrix(hp + f.head + ".weight", hs, static_cast<Eigen::Index>(hs[0]), static_cast<Eigen::Index>(d_pool));
      m.b_head = r.optional_row(hp + f.head + ".bias", hs[0]);
      if (!f.head_dist.empty() && r.has(hp + f.head_dist + ".weight")) {
        m.w_head_dist = r.matrix(hp + f.head_dist + ".weight", hs, static_cast<Eigen::Index>(hs[0]), static_cast<Eigen::Index>(d));
        m.b_head_dist = r.optional_row(hp + f.head_dist + ".bias", hs[0]);
      }
    }
    break;
  }
  if (m.w_head_dist.size() > 0) m.pooling = Pooling::class_and_dist;
  else if (m.fc_norm.present()) m.pooling = Pooling::patch_mean;
  else if (m.has_classifier()) m.pooling = f.head_pooling;
}

// The projection into the joint image-text space (CLIP), under the prefix or at the top:
// [E, D] (HF's visual_projection) or [D, E] applied as x·proj (OpenAI's visual.proj), kept as
// w_embed (E, D) either way. Bias-free in both.
void read_embedding_projection(const Reader& r, const CheckpointFamily& f, const std::string& prefix, std::uint64_t d,
                               VitModel& m) {
  if (f.embed.empty()) return;
  for (const std::string& ep : {prefix, std::string()}) {
    const std::string name = ep + f.embed;
    if (!r.has(name)) continue;
    const Shape& s = r.shape(name, f.embed_transposed ? "[D, E]" : "[E, D]");
    const std::uint64_t e = s.size() == 2 ? s[f.embed_transposed ? 1 : 0] : 0;
    const std::uint64_t width = s.size() == 2 ? s[f.embed_transposed ? 0 : 1] : 0;
    if (s.size() != 2 || width != d || e == 0 || e > (1u << 16))
      throw Error(r.source() + ": " + name + " is " + tensors::shape_string(s) + ", expected " +
                  (f.embed_transposed ? "[" + std::to_string(d) + ", E]" : "[E, " + std::to_string(d) + "]"));
    const auto ei = static_cast<Eigen::Index>(e), di = static_cast<Eigen::Index>(d);
    if (!f.embed_transposed) {
      m.w_embed = r.matrix(name, s, ei, di);  // (E, D)
    } else {
      const WeightMatrix stored = r.matrix(name, s, di, ei);  // (D, E)
      m.w_embed = Matrix(stored.transpose());  // (E, D), a copy: E·D floats
    }
    return;
  }
}

// SigLIP's attention-pooling head (HF SiglipMultiheadAttentionPoolingHead): probe [1, 1, D],
// attention.in_proj_weight [3·D, D] and bias [3·D] (torch nn.MultiheadAttention's packed q, k, v),
// attention.out_proj, layernorm, mlp.fc1/fc2. Sets Pooling::probe.
void read_probe_head(const Reader& r, const CheckpointFamily& f, const std::string& prefix, std::uint64_t d, VitModel& m) {
  if (f.probe_head.empty()) return;
  const std::string h = prefix + f.probe_head + ".";
  const auto di = static_cast<Eigen::Index>(d);
  ProbeHead& p = m.probe_head;
  p.probe = r.matrix(h + "probe", {1, 1, d}, 1, di).row(0);                                 // (D)
  p.w_qkv = r.matrix(h + "attention.in_proj_weight", {3 * d, d}, 3 * di, di);              // (3·D, D)
  p.b_qkv = r.optional_row(h + "attention.in_proj_bias", 3 * d);                           // (3·D)
  p.w_out = r.matrix(h + "attention.out_proj.weight", {d, d}, di, di);                     // (D, D)
  p.b_out = r.optional_row(h + "attention.out_proj.bias", d);
  p.norm = read_norm(r, h + "layernorm", d);
  const Shape& s1 = r.shape(h + "mlp.fc1.weight", "[d_mlp, D]");
  if (s1.size() != 2 || s1[1] != d || s1[0] == 0 || s1[0] > (1u << 20))
    throw Error(r.source() + ": " + h + "mlp.fc1.weight is " + tensors::shape_string(s1) + ", expected [d_mlp, " +
                std::to_string(d) + "]");
  const auto dm = static_cast<Eigen::Index>(s1[0]);
  p.w_fc1 = r.matrix(h + "mlp.fc1.weight", {s1[0], d}, dm, di);  // (d_mlp, D)
  p.b_fc1 = r.optional_row(h + "mlp.fc1.bias", s1[0]);
  p.w_fc2 = r.matrix(h + "mlp.fc2.weight", {d, s1[0]}, di, dm);  // (D, d_mlp)
  p.b_fc2 = r.optional_row(h + "mlp.fc2.bias", d);
  m.pooling = Pooling::probe;
}

// Heads: the override, else __metadata__, else the family's own count, else D/64 (every
// standard ViT uses 64-wide heads). open_model says where the sources disagree.
void choose_heads(const tensors::TensorFile& st, const CheckpointFamily& f, const VitOverrides& overrides, LoadedVit& out) {
  VitModel& m = out.model;
  const std::string& src = st.source();
  const auto d_attn = static_cast<long>(m.d_attn());
  const std::optional<long> meta_heads = metadata_heads(st);
  if (meta_heads && (*meta_heads <= 0 || *meta_heads > d_attn))
    throw Error(src + ": __metadata__ gives " + std::to_string(*meta_heads) + " heads for d_model " +
                std::to_string(m.d_model()));
  if (overrides.heads > 0) {
    m.n_heads = overrides.heads;
    out.heads_from = "asked for";
  } else if (meta_heads) {
    m.n_heads = static_cast<int>(*meta_heads);
    out.heads_from = "__metadata__";
  } else if (m.rope.present() && m.rope.periods.size() * 4 <= d_attn && d_attn % (m.rope.periods.size() * 4) == 0) {
    m.n_heads = static_cast<int>(d_attn / (m.rope.periods.size() * 4));  // d_head = 4 · the periods
    out.heads_from = "the RoPE periods";
  } else if (f.heads > 0) {
    m.n_heads = f.heads;
    out.heads_from = "the " + f.name + " layout";
  } else {
    if (d_attn % 64 != 0)
      throw Error({roles::head_count, ""}, "d_model " + std::to_string(d_attn) +
                                              " is not a multiple of 64 and the file does not say how many heads", src);
    m.n_heads = static_cast<int>(d_attn / 64);
    out.heads_from = "d_model / 64";
    out.heads_guessed = true;
  }
  if (m.n_heads <= 0 || d_attn % m.n_heads != 0)
    throw Error({roles::head_count, overrides.heads > 0 ? std::to_string(m.n_heads) : std::string()},
                std::to_string(m.n_heads) + " heads do not divide d_model " + std::to_string(d_attn), src);
}

// ε, GELU, normalisation and position resampling: the family's, then the file's own
// metadata, then the overrides.
void apply_settings(const tensors::TensorFile& st, const CheckpointFamily& f, const VitOverrides& overrides, VitModel& m) {
  const std::string& src = st.source();
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
    else if (it->second == "quick") m.gelu = Gelu::quick;
    else throw Error(src + ": __metadata__.gelu is \"" + it->second + "\", expected tanh, erf or quick");
  }
  if (auto it = meta.find("mean"); it != meta.end()) m.norm.mean = metadata_triplet(it->second, src + ": __metadata__.mean");
  if (auto it = meta.find("std"); it != meta.end()) m.norm.std = metadata_triplet(it->second, src + ": __metadata__.std");
  if (overrides.eps) m.eps = *overrides.eps;
  if (overrides.gelu) m.gelu = *overrides.gelu;
}

}  // namespace

LoadedVit load_vit(const tensors::TensorFile& st, const VitOverrides& overrides) {
  const auto [family, prefix] = detect(st, overrides.family, overrides.family_hint);
  const CheckpointFamily& f = *family;
  // The whole layout, on the names, before any tensor is read: nothing missing, nothing left over.
  const Layout layout = check_layout(st, f, prefix);
  const Reader r(st);
  LoadedVit out;
  out.family = f.name;
  out.prefix = prefix;
  out.outside = layout.outside;
  VitModel& m = out.model;
  const std::uint64_t d = read_patch_embedding(r, f, prefix, m);
  read_registers(r, f, prefix, d, m);
  read_positions(r, f, prefix, d, m);
  for (int i = 0; has_block(st, f, prefix, i); ++i) m.blocks.push_back(read_block(r, f, block_prefix(prefix, f, i), d));
  read_final_norm_and_head(r, f, prefix, d, m);
  // Whole when the family always has it, whole or absent when optional (check_layout said which).
  if (!f.norm_pre.empty() && r.has(prefix + f.norm_pre + ".weight")) m.norm_pre = read_norm(r, prefix + f.norm_pre, d);
  read_embedding_projection(r, f, prefix, d, m);
  read_probe_head(r, f, prefix, d, m);
  choose_heads(st, f, overrides, out);
  if (f.rope && !m.rope.present()) {
    if (m.d_head() % 4 != 0)
      throw Error(st.source() + ": RoPE needs heads a multiple of 4 wide; " + std::to_string(m.n_heads) +
                  " heads of d_model " + std::to_string(m.d_model()) + " are " + std::to_string(m.d_head()));
    m.rope.periods = rope_periods(static_cast<double>(overrides.rope_base.value_or(f.rope_base)), m.d_head());
  }
  apply_settings(st, f, overrides, m);
  return out;  // validated by open_model, once the config's and the caller's settings are in
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

namespace {
const char* pooling_note(Pooling p) {
  switch (p) {
    case Pooling::class_token: return "";
    case Pooling::class_and_dist: return " (class and distillation heads averaged)";
    case Pooling::patch_mean: return " (on fc_norm of the patch mean)";
    case Pooling::class_and_patch_mean: return " (on [class token, patch mean])";
    case Pooling::probe: return " (on the probe's pooled row)";
  }
  return "";
}

// What the position table's leading rows are for, beside the grid's: nothing said for the class
// token's alone (the usual table).
std::string positions_note(const VitModel& m) {
  if (m.rope.present()) return " (RoPE: any grid)";
  if (m.pos_prefix == 0) return " (no class position)";
  if (m.pos_prefix == 1) return "";
  const bool dist = m.has_dist(), registers = m.pos_prefix > (dist ? 2 : 1);
  return std::string(" (positions for ") + (dist ? "the distillation token" : "") + (dist && registers ? " and " : "") +
         (registers ? "the registers" : "") + ")";
}

// The norms around the blocks; the one before them said only where there is one (CLIP, timm's pre_norm).
std::string norms_note(const VitModel& m) {
  return std::string(m.norm_pre.present() ? "norm before the blocks, " : "") +
         (m.final_norm.present() ? "final norm" : "no final norm");
}
}  // namespace

std::string LoadedVit::summary() const {
  const VitModel& m = model;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "family %s%s%s: %d layers, D=%d, %d heads (%s) of %d, P=%d, grid %dx%d%s, %d registers, "
                "LayerNorm eps %g, GELU %s, %s, classifier %s, positions resampled %s, mean %g,%g,%g std %g,%g,%g",
                family.c_str(), prefix.empty() ? "" : " prefix ", prefix.c_str(), m.n_layers(), m.d_model(), m.n_heads,
                heads_from.c_str(), m.d_head(), m.patch_size, m.grid_w, m.grid_h,
                positions_note(m).c_str(), m.n_registers(), static_cast<double>(m.eps),
                gelu_name(m.gelu), norms_note(m).c_str(),
                m.has_classifier() ? std::to_string(m.n_classes()).append(" classes").append(pooling_note(m.pooling)).c_str() : "none",
                m.rope.present() ? "never" : pos_interp_name(m.pos_interp),
                static_cast<double>(m.norm.mean[0]), static_cast<double>(m.norm.mean[1]),
                static_cast<double>(m.norm.mean[2]), static_cast<double>(m.norm.std[0]),
                static_cast<double>(m.norm.std[1]), static_cast<double>(m.norm.std[2]));
  return buf;
}

}  // namespace vitattn::model
