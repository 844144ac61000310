#include "process_image.hpp"

#include <cmath>
#include <system_error>

#include "core/error.hpp"
#include "core/query_key.hpp"
#include "file_io.hpp"
#include "image_loader.hpp"
#include "npy.hpp"

namespace vitattn::io {
namespace {

void make_parent(const std::filesystem::path& base) {
  std::error_code ec;
  std::filesystem::create_directories(base.parent_path(), ec);
  if (ec) throw Error(display(base.parent_path()) + ": cannot create output folder: " + ec.message());
}

// masks (grid_h, grid_w) each, 1 = kept → <name>_mask.npy as bool [grid_h, grid_w], or
// [n_maps, grid_h, grid_w] when `stacked` (--head all).
void write_masks(const std::filesystem::path& path, const std::vector<Matrix>& masks, bool stacked) {
  std::vector<std::uint8_t> cells;
  for (const Matrix& m : masks)
    for (Eigen::Index i = 0; i < m.size(); ++i) cells.push_back(m.data()[i] > 0.5f ? 1 : 0);
  std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(masks.front().rows()),
                                   static_cast<std::uint64_t>(masks.front().cols())};
  if (stacked) shape.insert(shape.begin(), masks.size());
  write_npy_bool(path, cells.data(), shape);
}

std::string fmt_single_head(const SingleHeadModel& m) {
  return "single head, D=" + std::to_string(m.d_model()) + ", d_k=" + std::to_string(m.d_k()) + ", P=" +
         std::to_string(m.patch_size);
}

void process_single_head(const ImageJob& job, const SingleHeadModel& model, const ProcessOptions& options) {
  const cv::Mat bgr = load_image(job.input, options.max_pixels, options.damage);  // (H, W) original
  const ImageTensor x = preprocess(bgr, model.img_size(), model.norm);       // (3, S, S)
  const AttentionMaps maps = run_single_head(model, x, options.scale);
  cv::Mat overlay = render_overlay(bgr, maps.cls_map, options.render);       // (H, W)
  // The class row is a softmax row, probabilities summing to 1 with the class token's own
  // share: the mask works on it as on an encoder's map.
  std::vector<Matrix> masks;
  if (options.view.threshold) masks.push_back(mass_mask(maps.cls_map, *options.view.threshold));
  if (!masks.empty()) draw_mask_outline(overlay, masks.front());

  make_parent(job.output_base);
  if (options.report) {  // one layer, one head, and its q and k for the step-by-step panel
    ReportBuilder report({1, 1, 1, model.grid_size(), model.grid_size(), model.patch_size, model.img_size(), model.img_size()},
                         0, *options.report);
    report.add_layer(0, {maps.weights});
    const QueryKey qk = query_key(model, x);
    report.add_query_key(qk.q, qk.k, options.scale);
    report.write(with_suffix(job.output_base, report_suffix().c_str()), job.input.filename().string(), bgr, maps.cls_map,
                 fmt_single_head(model));
  }
  if (options.save_attention) {
    write_npy(with_suffix(job.output_base, "_attn.npy"), maps.weights);  // (n_tokens, n_tokens)
    write_npy(with_suffix(job.output_base, "_cls.npy"), maps.cls_map);   // (grid, grid), unnormalised
    if (!masks.empty()) write_masks(with_suffix(job.output_base, "_mask.npy"), masks, false);
  }
  write_image_atomic(with_suffix(job.output_base, overlay_suffix(extension(options.format.format)).c_str()), overlay, options.format);
}

// The maps to draw: one, or one per head. Each (grid_h, grid_w), unnormalised.
std::vector<Matrix> encoder_maps(const VitModel& model, const std::vector<Matrix>& heads, const Matrix& rollout,
                                 const EncoderView& view, int grid_h, int grid_w) {
  const int first = model.first_patch_token();
  std::vector<Matrix> maps;
  if (view.rollout) {
    maps.push_back(class_token_map(rollout, first, grid_h, grid_w));
  } else if (view.head == HeadChoice::all) {
    for (const Matrix& a : heads) maps.push_back(class_token_map(a, first, grid_h, grid_w));
  } else if (view.head == HeadChoice::index) {
    maps.push_back(class_token_map(heads[static_cast<std::size_t>(view.head_index)], first, grid_h, grid_w));
  } else {
    maps.push_back(class_token_map(fuse_heads(heads, view.fusion), first, grid_h, grid_w));
  }
  return maps;
}

void process_encoder(const ImageJob& job, const VitModel& model, const ProcessOptions& options) {
  const EncoderView& view = options.view;
  const int layer = resolve_layer(view.layer, model.n_layers());
  if (view.head == HeadChoice::index && view.head_index >= model.n_heads)
    throw Error("--head " + std::to_string(view.head_index) + ": the model has heads 0…" + std::to_string(model.n_heads - 1));

  const cv::Mat bgr = load_image(job.input, options.max_pixels, options.damage);  // (H, W) original
  const int s = view.img_size > 0 ? view.img_size : model.grid_h * model.patch_size;
  auto [width, height] = view.img_size > 0 || view.keep_aspect
                             ? input_size(bgr.cols, bgr.rows, s, model.patch_size, view.keep_aspect)
                             : std::pair{model.grid_w * model.patch_size, model.grid_h * model.patch_size};
  const ImageTensor x = preprocess(bgr, width, height, model.norm);  // (3, height, width)
  const int grid_h = height / model.patch_size, grid_w = width / model.patch_size;
  if (options.on_grid) options.on_grid(job, {bgr.cols, bgr.rows, width, height, grid_w, grid_h});

  std::optional<ReportBuilder> report;  // the page shows every layer: all of them run
  if (options.report)
    report.emplace(ReportShape{model.n_layers(), model.n_heads, model.first_patch_token(), grid_h, grid_w,
                               model.patch_size, width, height},
                   layer, *options.report);
  ForwardOptions fo;
  fo.last_layer = report ? model.n_layers() - 1 : layer;
  fo.keep_from_layer = view.rollout || report ? 0 : layer;
  fo.scale = options.scale;
  // Rollout folds each layer in as it comes, so memory holds one layer's heads, not all.
  AttentionRollout rollout(view.fusion, view.discard_ratio);
  std::vector<Matrix> heads;  // the chosen layer's, (n_tokens, n_tokens) each
  fo.on_attention = [&](int l, const std::vector<Matrix>& layer_heads) {
    if (view.rollout && l <= layer) rollout.add_layer(layer_heads);
    if (l == layer) heads = layer_heads;
    if (report) report->add_layer(l, layer_heads);
  };
  forward(model, x, fo);
  const std::vector<Matrix> maps = encoder_maps(model, heads, rollout.result(), view, grid_h, grid_w);

  std::vector<cv::Mat> overlays;
  std::vector<Matrix> masks;  // (grid_h, grid_w) each, with --threshold
  for (const Matrix& map : maps) {
    overlays.push_back(render_overlay(bgr, map, options.render));
    if (!view.threshold) continue;
    masks.push_back(mass_mask(map, *view.threshold));  // on the probabilities, not the display scale
    draw_mask_outline(overlays.back(), masks.back());
  }

  make_parent(job.output_base);
  if (report)
    report->write(with_suffix(job.output_base, report_suffix().c_str()), job.input.filename().string(), bgr, maps.front(),
                  "ViT, " + std::to_string(model.n_layers()) + " layers, " + std::to_string(model.n_heads) +
                      " heads, D=" + std::to_string(model.d_model()) + ", P=" + std::to_string(model.patch_size) +
                      (model.n_registers() ? ", " + std::to_string(model.n_registers()) + " registers" : ""));
  if (options.save_attention) {
    const auto n_tokens = static_cast<std::uint64_t>(heads.front().rows());
    std::vector<float> all;  // (n_heads, n_tokens, n_tokens)
    all.reserve(heads.size() * n_tokens * n_tokens);
    for (const Matrix& a : heads) all.insert(all.end(), a.data(), a.data() + a.size());
    write_npy(with_suffix(job.output_base, "_attn.npy"), all.data(), {heads.size(), n_tokens, n_tokens});
    std::vector<float> drawn;  // (grid_h, grid_w), or (n_heads, grid_h, grid_w) with --head all
    for (const Matrix& m : maps) drawn.insert(drawn.end(), m.data(), m.data() + m.size());
    std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(grid_h), static_cast<std::uint64_t>(grid_w)};
    const bool stacked = view.head == HeadChoice::all && !view.rollout;
    if (stacked) shape.insert(shape.begin(), maps.size());
    write_npy(with_suffix(job.output_base, "_cls.npy"), drawn.data(), shape);
    if (!masks.empty()) write_masks(with_suffix(job.output_base, "_mask.npy"), masks, stacked);
  }
  const std::string suffix_text = overlay_suffix(extension(options.format.format));
  const char* suffix = suffix_text.c_str();
  if (overlays.size() == 1) {
    write_image_atomic(with_suffix(job.output_base, suffix), overlays.front(), options.format);
    return;
  }
  std::vector<std::string> labels;
  for (std::size_t h = 0; h < overlays.size(); ++h) {
    labels.push_back("head " + std::to_string(h));
    write_image_atomic(with_suffix(job.output_base, head_overlay_suffix(static_cast<int>(h), extension(options.format.format)).c_str()),
                       overlays[h], options.format);
  }
  // The sheet of all heads is written last: when it exists, the per-head files do too.
  write_image_atomic(with_suffix(job.output_base, suffix), tile_images(overlays, labels, 512), options.format);
}

}  // namespace

std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect) {
  int w = img_size, h = img_size;
  if (keep_aspect) {
    const double aspect = static_cast<double>(std::max(image_w, image_h)) / std::min(image_w, image_h);
    const double longer = std::max(1.0, std::round(img_size * aspect / patch_size)) * patch_size;
    if (longer / patch_size * (img_size / patch_size) > kMaxPatches)
      throw Error("--keep-aspect: an image of " + std::to_string(image_w) + "x" + std::to_string(image_h) +
                  " at --img-size " + std::to_string(img_size) + " needs more than " + std::to_string(kMaxPatches) +
                  " patches; use a smaller --img-size or drop --keep-aspect");
    (image_w >= image_h ? w : h) = static_cast<int>(longer);
  }
  return {w, h};
}

int resolve_layer(int layer, int n_layers) {
  const int l = layer < 0 ? n_layers + layer : layer;
  if (l < 0 || l >= n_layers)
    throw Error("--layer " + std::to_string(layer) + ": the model has layers 0…" + std::to_string(n_layers - 1) +
                " (or −1…−" + std::to_string(n_layers) + " from the end)");
  return l;
}

OutputSet written_outputs(const Model& model, const ProcessOptions& options) {
  OutputSet outputs;
  outputs.image_extension = extension(options.format.format);
  outputs.save_attention = options.save_attention;
  outputs.mask = options.save_attention && options.view.threshold.has_value();
  outputs.report = options.report.has_value();
  const auto* vit = std::get_if<VitModel>(&model);
  // One overlay per head, beside the sheet, when --head all draws more than one map.
  if (vit && options.view.head == HeadChoice::all && !options.view.rollout && vit->n_heads > 1)
    outputs.head_overlays = vit->n_heads;
  return outputs;
}

void process_image(const ImageJob& job, const Model& model, const ProcessOptions& options) {
  std::visit(
      [&](const auto& m) {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, SingleHeadModel>)
          process_single_head(job, m, options);
        else
          process_encoder(job, m, options);
      },
      model);
}

}  // namespace vitattn::io
