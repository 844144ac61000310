#include "pipeline/forward_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/text_relevance.hpp"
#include "core/token_diagnostics.hpp"
#include "core/vit_backward.hpp"
#include "files/file_io.hpp"
#include "pipeline/job_outputs.hpp"
#include "pipeline/output_guard.hpp"
#include "tensors/npy.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t kMaxPixels = 4096ull * 4096ull;  // per image of an input

// One .npy of [3, H, W] or [N, 3, H, W] → N images, H and W multiples of the patch size.
std::vector<ImageTensor> read_inputs(const fs::path& path, int patch_size) {
  const tensors::NpyArray a = tensors::read_npy(path);
  std::vector<std::uint64_t> s = a.shape;
  if (s.size() == 3) s.insert(s.begin(), 1);
  const auto p = static_cast<std::uint64_t>(patch_size);
  if (s.size() != 4 || s[1] != 3 || s[0] == 0 || s[2] == 0 || s[3] == 0 || s[2] % p || s[3] % p || s[2] * s[3] > kMaxPixels)
    throw Error(fmt::format("{}: expected [3, H, W] or [N, 3, H, W] with H and W multiples of {}", files::display(path),
                            patch_size));
  std::vector<ImageTensor> images(s[0]);
  const std::size_t per = 3 * s[2] * s[3];
  for (std::size_t n = 0; n < images.size(); ++n) {
    images[n].height = static_cast<int>(s[2]);
    images[n].width = static_cast<int>(s[3]);
    images[n].chw.assign(a.values.begin() + static_cast<std::ptrdiff_t>(n * per),
                         a.values.begin() + static_cast<std::ptrdiff_t>((n + 1) * per));
    for (float v : images[n].chw)
      if (!std::isfinite(v)) throw Error(fmt::format("{}: holds a non-finite value", files::display(path)));
  }
  return images;
}

// The arrays of one input, each image's rows after the last one's.
struct Arrays {
  std::vector<float> attention, features, logits;
  std::vector<float> embedding;        // [N, d_embed] when the model has one
  std::vector<float> probe_attention;  // [N, heads, T] when the model pools with a probe
  std::vector<float> tokens;  // [N, T, width] every row of ForwardResult::tokens
  std::vector<float> norms;   // [N, layers, T] token_norms of each block's output
  std::vector<float> text_relevance;  // [N, n_texts, text layers, ctx] with texts (the image-text logits' words)
  struct OfClass {
    std::vector<float> grad_attention, grad_blocks;
    std::vector<std::vector<float>> relevance;  // [method]
  };
  std::vector<OfClass> classes;  // [the request's class], with classes only
  std::uint64_t n_tokens = 0, width = 0, grid_h = 0, grid_w = 0;
};

// One backward of y_c through the taped forward: every layer's ∂y_c/∂A_l and ∂y_c/∂x_l, in
// layer order (the backward hands them out from the last layer down), then the maps.
void add_gradients(const VitModel& model, const ForwardTape& tape, const ForwardRequest& r, int class_index,
                   const Arrays& shape, Arrays::OfClass& out) {
  const auto layers = static_cast<std::size_t>(model.n_layers());
  const auto tokens = static_cast<std::size_t>(tape.x_out.rows()), width = static_cast<std::size_t>(tape.x_out.cols());
  const std::size_t per_attention = static_cast<std::size_t>(model.n_heads) * tokens * tokens, per_block = tokens * width;
  const std::size_t attention_at = out.grad_attention.size(), blocks_at = out.grad_blocks.size();
  out.grad_attention.resize(attention_at + layers * per_attention);
  out.grad_blocks.resize(blocks_at + layers * per_block);
  encoder_backward(model, tape, class_index, r.scale, [&](int layer, const BlockGradients& g) {
    const auto l = static_cast<std::size_t>(layer);
    float* a = out.grad_attention.data() + attention_at + l * per_attention;
    for (const Matrix& d : g.d_attention) a = std::copy(d.data(), d.data() + d.size(), a);
    std::copy(g.d_input.data(), g.d_input.data() + g.d_input.size(), out.grad_blocks.data() + blocks_at + l * per_block);
  });
  if (r.methods.empty()) return;
  RelevanceSettings settings;
  settings.class_index = class_index;
  settings.legrad_from = r.legrad_from;
  settings.chefer_from = r.chefer_from;
  settings.discard_ratio = r.discard_ratio;
  settings.lrp_gamma_linear = r.lrp_gamma_linear;
  settings.lrp_gamma_conv = r.lrp_gamma_conv;
  settings.scale = r.scale;
  std::vector<RelevanceMap> methods;
  for (MapMethod m : r.methods) methods.push_back(relevance_map(m));
  const std::vector<Matrix> maps = relevance_maps(model, tape, methods, settings, static_cast<int>(shape.grid_h),
                                                  static_cast<int>(shape.grid_w));
  out.relevance.resize(maps.size());
  for (std::size_t m = 0; m < maps.size(); ++m)
    out.relevance[m].insert(out.relevance[m].end(), maps[m].data(), maps[m].data() + maps[m].size());
}

// Every layer's token norms of the stream after its block, told by the forward as each block
// ends; a layer it did not tell (which a full forward always does) is an error, not zeros.
class NormsOfBlocks {
 public:
  explicit NormsOfBlocks(int layers) : norms_(static_cast<std::size_t>(layers)) {}
  void hear(int layer, const Matrix& x) { norms_.at(static_cast<std::size_t>(layer)) = token_norms(x); }
  // Appends (layers, n_tokens) row after row to `out`.
  void append_to(std::vector<float>& out, Eigen::Index n_tokens) const {
    for (std::size_t l = 0; l < norms_.size(); ++l) {
      if (norms_[l].size() != n_tokens) throw Error(fmt::format("forward: layer {}'s output was not told", l));
      out.insert(out.end(), norms_[l].data(), norms_[l].data() + norms_[l].size());
    }
  }

 private:
  std::vector<RowVector> norms_;  // [layer] (n_tokens)
};

void add_image(const VitModel& model, const ImageTensor& x, const ForwardRequest& r, Arrays& out) {
  ForwardOptions fo;
  fo.keep_from_layer = 0;
  fo.scale = r.scale;
  ForwardTape tape;
  if (!r.classes.empty()) fo.tape = &tape;
  NormsOfBlocks norms(model.n_layers());
  fo.on_block_output = [&norms](int layer, const Matrix& stream) { norms.hear(layer, stream); };
  const ForwardResult result = forward(model, x, fo);
  out.n_tokens = static_cast<std::uint64_t>(result.tokens.rows());
  out.width = static_cast<std::uint64_t>(result.tokens.cols());  // d_model, or d_attn after an attention-only block
  out.grid_h = static_cast<std::uint64_t>(x.height / model.patch_size);
  out.grid_w = static_cast<std::uint64_t>(x.width / model.patch_size);
  for (const auto& layer : result.attention)
    for (const Matrix& a : layer) out.attention.insert(out.attention.end(), a.data(), a.data() + a.size());
  out.features.insert(out.features.end(), result.tokens.data(), result.tokens.data() + result.tokens.cols());  // row 0: class token
  out.tokens.insert(out.tokens.end(), result.tokens.data(), result.tokens.data() + result.tokens.size());  // row-major
  norms.append_to(out.norms, result.tokens.rows());
  out.logits.insert(out.logits.end(), result.logits.data(), result.logits.data() + result.logits.size());
  out.embedding.insert(out.embedding.end(), result.embedding.data(), result.embedding.data() + result.embedding.size());
  for (const Matrix& a : result.probe_attention)  // (1, n_tokens) a head
    out.probe_attention.insert(out.probe_attention.end(), a.data(), a.data() + a.size());
  out.classes.resize(r.classes.size());
  for (std::size_t c = 0; c < r.classes.size(); ++c) add_gradients(model, tape, r, r.classes[c], out, out.classes[c]);
}

// The image-text logits (N, n) of the input's image embeddings (n_images, E) against the
// texts' (core/text_tower.hpp image_text_logits: the tower's scale and bias).
Matrix input_text_logits(const Arrays& a, std::uint64_t n_images, const EncodedTexts& texts) {
  const auto e = static_cast<Eigen::Index>(texts.embeddings.cols());
  if (a.embedding.size() != n_images * static_cast<std::uint64_t>(e))
    throw Error(fmt::format("the image embedding is not {} wide, as the text embedding is", e));
  const Eigen::Map<const Matrix> images(a.embedding.data(), static_cast<Eigen::Index>(n_images), e);  // (N, E)
  return image_text_logits(*texts.tower, images, texts.embeddings);
}

// Every text's word relevance for every image [N, n, layers, ctx]: one forward with a tape per
// text, then one backward per image (core/text_relevance.hpp); zeros outside the words (word_span).
std::vector<float> text_relevance(const Arrays& a, std::uint64_t n_images, const EncodedTexts& texts,
                                  const ForwardRequest& r) {
  const TextTower& tower = *texts.tower;
  const auto n_texts = r.texts.size(), layers = static_cast<std::size_t>(tower.n_layers()),
             ctx = static_cast<std::size_t>(tower.context()), e = static_cast<std::size_t>(tower.d_embed());
  if (a.embedding.size() != n_images * e)
    throw Error(fmt::format("the image embedding is not {} wide, as the text embedding is", e));
  std::vector<float> out(n_images * n_texts * layers * ctx, 0.0f);
  for (std::size_t t = 0; t < n_texts; ++t) {
    ForwardTape tape;
    encode_text(tower, r.texts[t], false, &tape);
    const int pooled = pooled_position(tower, r.texts[t]);
    const auto [begin, end] = word_span(tower, r.texts[t]);
    for (std::size_t i = 0; i < n_images; ++i) {
      const RowVector u = Eigen::Map<const RowVector>(a.embedding.data() + i * e, static_cast<Eigen::Index>(e));
      const Matrix rows =
          relevance_by_start_layer(tower, tape, pooled, text_logit_gradient(tower, tape.x_out.row(pooled), u), 0);
      for (std::size_t s = 0; s < layers; ++s)
        for (int j = begin; j < end; ++j)
          out[((i * n_texts + t) * layers + s) * ctx + static_cast<std::size_t>(j)] = rows(static_cast<Eigen::Index>(s), j);
    }
  }
  return out;
}

ForwardOutputs write_arrays(const VitModel& model, const Arrays& a, std::uint64_t n, const ForwardOutputs& f,
                            const EncodedTexts* texts) {
  const auto layers = static_cast<std::uint64_t>(model.n_layers()), heads = static_cast<std::uint64_t>(model.n_heads);
  ForwardOutputs written;
  tensors::write_npy(f.attention, a.attention.data(), {n, layers, heads, a.n_tokens, a.n_tokens});
  written.attention = f.attention;
  tensors::write_npy(f.features, a.features.data(), {n, a.width});
  written.features = f.features;
  tensors::write_npy(f.tokens, a.tokens.data(), {n, a.n_tokens, a.width});
  written.tokens = f.tokens;
  tensors::write_npy(f.norms, a.norms.data(), {n, layers, a.n_tokens});
  written.norms = f.norms;
  if (!a.embedding.empty()) {
    tensors::write_npy(f.embedding, a.embedding.data(), {n, a.embedding.size() / n});
    written.embedding = f.embedding;
  }
  if (!a.probe_attention.empty()) {
    tensors::write_npy(f.probe_attention, a.probe_attention.data(), {n, heads, a.n_tokens});
    written.probe_attention = f.probe_attention;
  }
  if (texts) {
    const Matrix logits = input_text_logits(a, n, *texts);  // (N, n)
    if (!model.has_classifier()) {  // else the texts are the classifier (--class among them): its logits, the same
      tensors::write_npy(f.logits, logits);
      written.logits = f.logits;
    }
    tensors::write_npy(f.probs, image_text_probabilities(*texts->tower, logits));
    written.probs = f.probs;
    if (!f.text_relevance.empty()) {
      tensors::write_npy(f.text_relevance, a.text_relevance.data(),
                         {n, static_cast<std::uint64_t>(texts->embeddings.rows()),
                          static_cast<std::uint64_t>(texts->tower->n_layers()),
                          static_cast<std::uint64_t>(texts->tower->context())});
      written.text_relevance = f.text_relevance;
    }
  }
  if (!model.has_classifier()) return written;
  tensors::write_npy(f.logits, a.logits.data(), {n, static_cast<std::uint64_t>(model.n_classes())});
  written.logits = f.logits;
  for (std::size_t c = 0; c < f.classes.size(); ++c) {
    const ClassOutputs& names = f.classes[c];
    const Arrays::OfClass& arrays = a.classes[c];
    ClassOutputs& done = written.classes.emplace_back();
    done.class_index = names.class_index;
    tensors::write_npy(names.grad_attention, arrays.grad_attention.data(), {n, layers, heads, a.n_tokens, a.n_tokens});
    done.grad_attention = names.grad_attention;
    tensors::write_npy(names.grad_blocks, arrays.grad_blocks.data(), {n, layers, a.n_tokens, a.width});
    done.grad_blocks = names.grad_blocks;
    for (std::size_t m = 0; m < names.relevance.size(); ++m) {
      tensors::write_npy(names.relevance[m], arrays.relevance[m].data(), {n, a.grid_h, a.grid_w});
      done.relevance.push_back(names.relevance[m]);
    }
  }
  return written;
}

ForwardInputResult forward_file(const VitModel& model, const fs::path& input, const ForwardRequest& r,
                                const EncodedTexts* texts) {
  const std::vector<ImageTensor> images = read_inputs(input, model.patch_size);
  Arrays arrays;
  naming_source(files::display(input), [&] {  // the core's errors name no file (activations that became non-finite)
    for (const ImageTensor& x : images) add_image(model, x, r, arrays);
    if (texts && !r.texts.empty()) arrays.text_relevance = text_relevance(arrays, images.size(), *texts, r);
  });
  ForwardInputResult out;
  out.input = input;
  out.images = images.size();
  out.written = write_arrays(model, arrays, images.size(), forward_outputs(r, input), texts);
  return out;
}

}  // namespace

ForwardOutputs forward_outputs(const ForwardRequest& r, const fs::path& input) {
  const std::string stem = input.stem().string();
  const auto named = [&](const std::string& what) { return r.output / (stem + array_suffix(what)); };
  ForwardOutputs f;
  f.attention = named("attention");
  f.features = named("features");
  f.tokens = named("tokens");
  f.norms = named("norms");
  f.logits = named("logits");
  f.embedding = named("embedding");
  f.probe_attention = named("probe_attention");
  if (!r.texts.empty() || !r.class_labels.empty()) f.probs = named("probs");  // the image-text probabilities, only beside texts
  if (!r.texts.empty()) f.text_relevance = named("text_relevance");
  for (int c : r.classes) {
    // One class: the plain names; several: each class's tagged as the image command tags its maps.
    const std::string tag = map_tag("", r.classes.size() > 1 ? std::optional<int>(c) : std::nullopt, r.class_source);
    ClassOutputs& o = f.classes.emplace_back();
    o.class_index = c;
    o.grad_attention = named("grad_attention" + tag);
    o.grad_blocks = named("grad_blocks" + tag);
    for (MapMethod m : r.methods) o.relevance.push_back(named("relevance_" + method_name(m) + tag));
  }
  return f;
}

std::vector<fs::path> ForwardOutputs::all() const {
  std::vector<fs::path> out;
  for (const fs::path& p : {attention, features, tokens, norms, logits, embedding, probe_attention, probs, text_relevance})
    if (!p.empty()) out.push_back(p);
  for (const ClassOutputs& c : classes) {
    for (const fs::path& p : {c.grad_attention, c.grad_blocks})
      if (!p.empty()) out.push_back(p);
    out.insert(out.end(), c.relevance.begin(), c.relevance.end());
  }
  return out;
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
  for (const fs::path& f : r.class_files) guard.reads(f, roles::class_list);
  for (const fs::path& in : inputs) guard.reads(in, roles::input);
  for (const fs::path& in : inputs) {
    for (const fs::path& p : forward_outputs(r, in).all()) guard.derives(p, "the output of " + files::display(in));
  }
  for (const fs::path& p : text_outputs(r).all()) guard.derives(p, "the texts' output");
}

TextOutputs text_outputs(const ForwardRequest& r) {
  if (!r.class_labels.empty()) {
    TextOutputs f;
    f.embedding = r.output / text_array_name("embedding");
    f.labels = r.output / text_labels_name();
    return f;
  }
  if (r.texts.empty()) return {};
  return {r.output / text_array_name("ids"), r.output / text_array_name("embedding"),
          r.output / text_array_name("attention"), {}};
}

std::vector<fs::path> TextOutputs::all() const {
  std::vector<fs::path> out;
  for (const fs::path& p : {ids, embedding, attention, labels})
    if (!p.empty()) out.push_back(p);
  return out;
}

EncodedTexts forward_texts(const TextTower& tower, const ForwardRequest& r) {
  const auto n = static_cast<std::uint64_t>(r.texts.size()), ctx = static_cast<std::uint64_t>(tower.context());
  const auto layers = static_cast<std::uint64_t>(tower.n_layers()), heads = static_cast<std::uint64_t>(tower.n_heads);
  EncodedTexts out;
  out.tower = &tower;
  out.embeddings.resize(static_cast<Eigen::Index>(n), tower.d_embed());
  std::vector<std::int32_t> ids;                                   // [n, ctx]
  std::vector<float> attention(n * layers * heads * ctx * ctx, 0.0f);  // [n, L, H, ctx, ctx], zeros past the computed length
  const std::vector<TextResult> results = encode_texts(tower, r.texts, true);
  for (std::uint64_t t = 0; t < n; ++t) {
    const TextResult& result = results[t];
    out.embeddings.row(static_cast<Eigen::Index>(t)) = result.embedding;
    ids.insert(ids.end(), r.texts[t].begin(), r.texts[t].end());
    const auto len = static_cast<std::uint64_t>(result.length);
    for (std::uint64_t l = 0; l < layers; ++l)
      for (std::uint64_t h = 0; h < heads; ++h) {
        const Matrix& a = result.attention[l][h];  // (len, len)
        float* at = attention.data() + (((t * layers + l) * heads + h) * ctx) * ctx;
        for (std::uint64_t i = 0; i < len; ++i)
          std::copy(a.row(static_cast<Eigen::Index>(i)).data(), a.row(static_cast<Eigen::Index>(i)).data() + len, at + i * ctx);
      }
  }
  const TextOutputs f = text_outputs(r);
  tensors::write_npy_int32(f.ids, ids.data(), {n, ctx});
  tensors::write_npy(f.embedding, out.embeddings);
  tensors::write_npy(f.attention, attention.data(), {n, layers, heads, ctx, ctx});
  out.written = f;
  return out;
}

EncodedTexts write_class_texts(const Matrix& embeddings, const TextTower& tower, const ForwardRequest& r) {
  if (static_cast<std::size_t>(embeddings.rows()) != r.class_labels.size())
    throw Error(fmt::format("{} class embeddings for {} labels", embeddings.rows(), r.class_labels.size()));
  EncodedTexts out;
  out.embeddings = embeddings;
  out.tower = &tower;
  out.written = text_outputs(r);
  std::string labels;
  for (const std::string& l : r.class_labels) labels += l + "\n";
  tensors::write_npy(out.written.embedding, out.embeddings);
  files::write_file_atomic(out.written.labels, labels.data(), labels.size());
  return out;
}

std::vector<ForwardInputResult> forward_files(const VitModel& model, const ForwardRequest& r, const EncodedTexts* texts) {
  std::vector<ForwardInputResult> results;
  for (const fs::path& input : r.inputs) {
    try {
      results.push_back(forward_file(model, input, r, texts));
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
