#include "model/text_tower_loader.hpp"

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "model/checkpoint_families.hpp"

namespace vitattn::model {
namespace {

using Shape = std::vector<std::uint64_t>;

// One naming of a text tower, its fields in the order the tower is read; after them, what the
// family computes differently (core/text_tower.hpp's table) and its tokeniser.
struct TextNaming {
  std::string name;                  // the image family it ships with (checkpoint_families.cpp)
  std::string model;                 // the model's name in messages ("CLIP")
  std::string image_prefix;          // where that family's image tower must sit for this naming to apply
  std::string token_embedding;       // [vocab, W]
  std::string positional_embedding;  // [ctx, W]
  std::string block;                 // with "{i}"
  BlockNaming block_naming;
  std::string final_norm;            // <name>.weight / .bias [W]
  std::string projection;            // the projection's weight
  bool projection_transposed;        // stored [W, E], applied x @ P (OpenAI); else [E, W] (HF's nn.Linear)
  std::string projection_bias = {};  // [E]; empty: bias-free (CLIP)
  std::string logit_scale;           // a scalar (any shape of one value)
  std::string logit_bias = {};       // a scalar; empty: none (CLIP)
  TextMask mask = TextMask::causal;
  TextPooling pooling = TextPooling::end_of_text;
  ClassProbability probabilities = ClassProbability::softmax;
  TextTokenizer tokenizer = TextTokenizer::clip_bpe;
};

const std::vector<TextNaming>& text_namings() {
  static const std::vector<TextNaming> rows = {
      // OpenAI clip/model.py CLIP and OpenCLIP's CLIP: the text tower's tensors at the top of the state dict.
      {.name = "clip",
       .model = "CLIP",
       .image_prefix = "visual.",
       .token_embedding = "token_embedding.weight",
       .positional_embedding = "positional_embedding",
       .block = "transformer.resblocks.{i}.",
       .block_naming = {.norm1 = "ln_1", .qkv = {"attn.in_proj_"}, .proj = "attn.out_proj", .norm2 = "ln_2",
                        .fc1 = "mlp.c_fc", .fc2 = "mlp.c_proj"},
       .final_norm = "ln_final",
       .projection = "text_projection",
       .projection_transposed = true,
       .logit_scale = "logit_scale"},
      // Hugging Face modeling_clip.py CLIPModel: CLIPTextTransformer under text_model., its projection outside.
      {.name = "hf-clip",
       .model = "CLIP",
       .image_prefix = "vision_model.",
       .token_embedding = "text_model.embeddings.token_embedding.weight",
       .positional_embedding = "text_model.embeddings.position_embedding.weight",
       .block = "text_model.encoder.layers.{i}.",
       .block_naming = {.norm1 = "layer_norm1",
                        .qkv = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                        .proj = "self_attn.out_proj",
                        .norm2 = "layer_norm2",
                        .fc1 = "mlp.fc1",
                        .fc2 = "mlp.fc2"},
       .final_norm = "text_model.final_layer_norm",
       .projection = "text_projection.weight",
       .projection_transposed = false,
       .logit_scale = "logit_scale"},
      // Hugging Face modeling_siglip.py SiglipModel (SigLIP 2's the same): SiglipTextTransformer
      // under text_model., its head inside it, no attention mask, last_hidden_state[:, -1] pooled.
      {.name = "siglip",
       .model = "SigLIP",
       .image_prefix = "vision_model.",
       .token_embedding = "text_model.embeddings.token_embedding.weight",
       .positional_embedding = "text_model.embeddings.position_embedding.weight",
       .block = "text_model.encoder.layers.{i}.",
       .block_naming = {.norm1 = "layer_norm1",
                        .qkv = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                        .proj = "self_attn.out_proj",
                        .norm2 = "layer_norm2",
                        .fc1 = "mlp.fc1",
                        .fc2 = "mlp.fc2"},
       .final_norm = "text_model.final_layer_norm",
       .projection = "text_model.head.weight",
       .projection_transposed = false,
       .projection_bias = "text_model.head.bias",
       .logit_scale = "logit_scale",
       .logit_bias = "logit_bias",
       .mask = TextMask::none,
       .pooling = TextPooling::last,
       .probabilities = ClassProbability::sigmoid,
       .tokenizer = TextTokenizer::sentencepiece},
  };
  return rows;
}

// Tensors read by name with the file's name and the expected shape in every message; values copied.
class TextReader {
 public:
  TextReader(const tensors::TensorFile& st, std::vector<std::string>& read) : st_(st), read_(read) {}
  bool has(const std::string& name) const { return st_.find(name) != nullptr; }

  const Shape& shape(const std::string& name) const {
    const tensors::TensorInfo* t = st_.find(name);
    if (!t) throw Error(st_.source() + ": text tower tensor " + name + " is missing");
    return t->shape;
  }
  // A 2-d tensor [rows, cols] of any size (checked against the others by TextTower::validate).
  Matrix matrix(const std::string& name) const {
    const Shape& s = shape(name);
    if (s.size() != 2 || s[0] == 0 || s[1] == 0 || s[0] > (1u << 24) || s[1] > (1u << 16))
      throw Error(st_.source() + ": " + name + " is " + tensors::shape_string(s) + ", expected a matrix");
    return read(name, s, static_cast<Eigen::Index>(s[0]), static_cast<Eigen::Index>(s[1]));
  }
  Matrix matrix(const std::string& name, std::uint64_t rows, std::uint64_t cols) const {
    shape(name);
    return read(name, {rows, cols}, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  }
  RowVector row(const std::string& name, std::uint64_t n) const {
    shape(name);
    return RowVector(read(name, {n}, 1, static_cast<Eigen::Index>(n)).row(0));
  }
  RowVector optional_row(const std::string& name, std::uint64_t n) const { return has(name) ? row(name, n) : RowVector(); }
  float scalar(const std::string& name) const {
    const Shape& s = shape(name);
    std::uint64_t count = 1;
    for (std::uint64_t e : s) count *= e;
    if (count != 1) throw Error(st_.source() + ": " + name + " is " + tensors::shape_string(s) + ", expected one value");
    return read(name, s, 1, 1)(0, 0);
  }

 private:
  Matrix read(const std::string& name, const Shape& expected, Eigen::Index rows, Eigen::Index cols) const {
    Matrix m(rows, cols);  // row-major, as the file
    st_.read_floats(name, expected, m.data());
    read_.push_back(name);
    if (!m.allFinite()) throw Error(st_.source() + ": " + name + " holds a non-finite value");
    return m;
  }
  const tensors::TensorFile& st_;
  std::vector<std::string>& read_;
};

std::string block_at(const TextNaming& n, int i) {
  std::string b = n.block;
  b.replace(b.find("{i}"), 3, std::to_string(i));
  return b;
}

LayerNorm read_norm(const TextReader& r, const std::string& name, std::uint64_t w) {
  return {r.row(name + ".weight", w), r.row(name + ".bias", w)};
}

// One block: W wide, its MLP as wide as its fc1's rows. Query, key and value apart (HF) are
// stacked into the packed [Q; K; V] rows.
EncoderBlock read_block(const TextReader& r, const BlockNaming& n, const std::string& bp, std::uint64_t w) {
  EncoderBlock b;
  const auto wi = static_cast<Eigen::Index>(w);
  b.norm1 = read_norm(r, bp + n.norm1, w);
  if (n.qkv.size() == 1) {
    b.w_qkv = r.matrix(bp + weight_of(n.qkv[0]), 3 * w, w);  // (3·W, W)
    b.b_qkv = r.optional_row(bp + bias_of(n.qkv[0]), 3 * w);  // (3·W)
  } else {
    Matrix qkv(3 * wi, wi);  // (3·W, W) rows [W_Q; W_K; W_V]
    b.b_qkv = RowVector::Zero(3 * wi);
    for (std::size_t j = 0; j < 3; ++j) {
      qkv.middleRows(static_cast<Eigen::Index>(j) * wi, wi) = r.matrix(bp + weight_of(n.qkv[j]), w, w);
      if (r.has(bp + bias_of(n.qkv[j])))
        b.b_qkv.segment(static_cast<Eigen::Index>(j) * wi, wi) = r.row(bp + bias_of(n.qkv[j]), w);
    }
    b.w_qkv = std::move(qkv);
  }
  b.w_proj = r.matrix(bp + weight_of(n.proj), w, w);  // (W, W)
  b.b_proj = r.optional_row(bp + bias_of(n.proj), w);
  b.norm2 = read_norm(r, bp + n.norm2, w);
  const Matrix fc1 = r.matrix(bp + weight_of(n.fc1));  // (d_mlp, W)
  const auto d_mlp = static_cast<std::uint64_t>(fc1.rows());
  b.w_fc1 = fc1;
  b.b_fc1 = r.optional_row(bp + bias_of(n.fc1), d_mlp);
  b.w_fc2 = r.matrix(bp + weight_of(n.fc2), w, d_mlp);  // (W, d_mlp)
  b.b_fc2 = r.optional_row(bp + bias_of(n.fc2), w);
  return b;
}

TextTower read_tower(const tensors::TensorFile& st, const TextNaming& n, const TextSettings& settings,
                     std::string& heads_from, std::vector<std::string>& read) {
  const TextReader r(st, read);
  TextTower t;
  t.eps = settings.eps;
  t.gelu = settings.gelu;
  t.token_embedding = r.matrix(n.token_embedding);  // (vocab, W)
  const auto w = static_cast<std::uint64_t>(t.token_embedding.cols());
  const Shape& ps = r.shape(n.positional_embedding);
  if (ps.size() != 2 || ps[1] != w || ps[0] < 2 || ps[0] > 4096)
    throw Error(st.source() + ": " + n.positional_embedding + " is " + tensors::shape_string(ps) + ", expected [ctx, " +
                std::to_string(w) + "]");
  t.positional_embedding = r.matrix(n.positional_embedding, ps[0], w);  // (ctx, W)
  for (int i = 0; st.find(block_at(n, i) + n.block_naming.norm1 + ".weight"); ++i)
    t.blocks.push_back(read_block(r, n.block_naming, block_at(n, i), w));
  if (t.blocks.empty()) throw Error(st.source() + ": the text tower has no block " + block_at(n, 0));
  t.final_norm = read_norm(r, n.final_norm, w);
  const Matrix projection = r.matrix(n.projection);  // [W, E] (OpenAI) or [E, W] (HF)
  t.w_projection = n.projection_transposed ? Matrix(projection.transpose()) : projection;  // (E, W)
  if (!n.projection_bias.empty()) t.b_projection = r.row(n.projection_bias, static_cast<std::uint64_t>(t.w_projection.rows()));
  t.logit_scale = r.scalar(n.logit_scale);
  if (!n.logit_bias.empty()) t.logit_bias = r.scalar(n.logit_bias);
  t.mask = n.mask;
  t.pooling = n.pooling;
  t.probabilities = n.probabilities;
  if (settings.heads > 0) {
    t.n_heads = settings.heads;
    heads_from = "config.json's text_config";
  } else {
    if (w % 64 != 0)
      throw Error(st.source() + ": the text tower is " + std::to_string(w) +
                  " wide, not a multiple of 64, and no config.json's text_config says how many heads it has");
    t.n_heads = static_cast<int>(w / 64);  // OpenAI's model.py: transformer_heads = transformer_width // 64
    heads_from = "width / 64";
  }
  t.validate(st.source());
  return t;
}

}  // namespace

LoadedText load_text_tower(const tensors::TensorFile& st, const std::string& image_family,
                           const std::string& image_prefix, const TextSettings& settings) {
  LoadedText out;
  for (const TextNaming& n : text_namings()) {
    if (n.name != image_family || n.image_prefix != image_prefix || !st.find(n.token_embedding)) continue;
    out.naming = n.name;
    out.tokenizer = n.tokenizer;
    try {
      out.tower = read_tower(st, n, settings, out.heads_from, out.tensors);
    } catch (const Error& e) {
      out.tower = TextTower();
      out.tensors.clear();
      out.missing = e.what();
    }
    return out;
  }
  for (const TextNaming& n : text_namings())
    if (n.name == image_family) {  // a family that ships with a text tower
      out.missing = st.source() + " holds a " + n.model + " image tower without its text tower";
      return out;
    }
  out.missing = st.source() + " is a " + image_family + " model, which has no text tower";
  return out;
}

}  // namespace vitattn::model
