#pragma once
// One image, start to finish: decode → preprocess → attention → overlay (+ .npy) on disk.
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <variant>

#include "batch_plan.hpp"
#include "image_loader.hpp"
#include "core/attention_maps.hpp"
#include "core/model.hpp"
#include "core/vit.hpp"
#include "image_writer.hpp"
#include "overlay.hpp"
#include "report_page.hpp"

namespace vitattn::io {

// The native single-head layout (and the seeded model), or a full encoder checkpoint.
using Model = std::variant<SingleHeadModel, VitModel>;

enum class HeadChoice { index, fuse, all };

// What to draw from an encoder: one layer's head or fused heads, or the rollout up to it.
struct EncoderView {
  int layer = -1;                 // −1 = last; negative counts from the end
  HeadChoice head = HeadChoice::fuse;
  int head_index = 0;             // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;
  bool rollout = false;
  float discard_ratio = 0.0f;
  std::optional<float> threshold; // DINO mass mask, drawn as an outline
  int img_size = 0;               // 0: the model's own size
  bool keep_aspect = false;       // shorter side = img_size, longer side to the nearest patch multiple
};

// The patch grid an image went through: after --img-size and --keep-aspect, for -v.
struct InputGrid {
  int image_w = 0, image_h = 0;  // the decoded image
  int input_w = 0, input_h = 0;  // the model input it was resized to
  int grid_w = 0, grid_h = 0;    // patches
};

struct ProcessOptions {
  RenderOptions render;
  OutputFormat format;          // the overlays' file format (PNG by default)
  bool scale = true;            // 1/√d_k
  bool save_attention = false;  // also write _attn.npy and _cls.npy (and _mask.npy with a threshold)
  std::uint64_t max_pixels = 100'000'000;
  DamagePolicy damage;          // an image the decoder had to patch up: warn, or fail with --strict
  EncoderView view;
  std::optional<ReportSettings> report;  // also write <name>_report.html, the interactive page
  std::function<void(const ImageJob&, const InputGrid&)> on_grid;  // told each encoder image's grid, when set
};

inline constexpr int kMaxPatches = 4096;  // 64×64: attention matrices stay under 64 MiB per head

// The model input (width, height) for an image of (width, height): S×S, or with keep_aspect
// the shorter side S and the longer rounded to the nearest multiple of P. Throws Error when
// that would take more than kMaxPatches patches.
std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect);

// The layer index `layer` means in a model of n_layers (negative counts from the end);
// throws Error when out of range.
int resolve_layer(int layer, int n_layers);

// Throws Error with a one-line message naming the input (or the output it could not write).
// Writes output_paths(job.output_base, written_outputs(model, options)), no other file.
void process_image(const ImageJob& job, const Model& model, const ProcessOptions& options);

// Which outputs process_image writes for each job with these options: keep in step with it.
OutputSet written_outputs(const Model& model, const ProcessOptions& options);

}  // namespace vitattn::io
