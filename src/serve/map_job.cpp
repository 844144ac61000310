#include "map_job.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "image/image_loader.hpp"
#include "image/image_writer.hpp"
#include "pipeline/process_image.hpp"
#include "tensors/npy.hpp"

namespace vitattn::serve {

pipeline::ProcessOptions map_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels) {
  pipeline::ProcessOptions options;  // the CLI's defaults: PNG, 1/√d_k, the mean of the last layer's heads
  options.max_pixels = max_pixels;
  pipeline::EncoderView& view = options.view;
  view.layer = query.layer;
  view.head = query.head;
  view.head_index = query.head_index;
  view.fusion = query.fusion;
  view.methods = {query.method};
  if (query.class_index) view.classes = {{*query.class_index, served.labels.label(*query.class_index)}};
  view.class_names = served.labels.names;
  view.img_size = served.img_size;
  pipeline::check_view(served.model, view, served.name);
  return options;
}

MapAnswer compute_map(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                      const MapQuery& query, std::uint64_t max_pixels) {
  const pipeline::ProcessOptions options = map_options(served, query, max_pixels);
  const cv::Mat bgr = io::decode_image(image, source, options.max_pixels, options.damage);  // (H, W) 8-bit
  std::vector<pipeline::NamedMap> maps;
  try {
    maps = pipeline::image_maps(bgr, served.model, options);  // one map: one method, one class, one head or fusion
  } catch (const Error& e) {  // as process_image's: the core's errors name no input
    if (e.subject()) throw;
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
  const Matrix& map = maps.front().map;  // (grid_h, grid_w)
  if (query.format == MapFormat::npy) return {io::encode_npy(map), "application/octet-stream"};
  const cv::Mat overlay = pipeline::draw_overlays(bgr, {map}, options).front();  // (H, W) BGR
  return {io::encode_image(overlay, options.format), "image/png"};
}

}  // namespace vitattn::serve
