#include "process_image.hpp"

#include <system_error>

#include "core/error.hpp"
#include "file_io.hpp"
#include "image_loader.hpp"
#include "npy.hpp"

namespace vitattn::io {

void process_image(const ImageJob& job, const SingleHeadModel& model, const ProcessOptions& options) {
  const cv::Mat bgr = load_image(job.input, options.max_pixels);            // (H, W) original
  const ImageTensor x = preprocess(bgr, model.img_size(), model.norm);       // (3, S, S)
  const AttentionMaps maps = run_single_head(model, x, options.scale);
  const cv::Mat overlay = render_overlay(bgr, maps.cls_map, options.render);  // (H, W)

  std::error_code ec;
  std::filesystem::create_directories(job.output_base.parent_path(), ec);
  if (ec) throw Error(display(job.output_base.parent_path()) + ": cannot create output folder: " + ec.message());
  if (options.save_attention) {
    write_npy(with_suffix(job.output_base, "_attn.npy"), maps.weights);  // (n_tokens, n_tokens)
    write_npy(with_suffix(job.output_base, "_cls.npy"), maps.cls_map);   // (grid, grid), unnormalised
  }
  write_png_atomic(with_suffix(job.output_base, "_attn.png"), overlay);
}

}  // namespace vitattn::io
