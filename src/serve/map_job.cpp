#include "map_job.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "image/image_loader.hpp"
#include "image/image_writer.hpp"
#include "pipeline/class_choice.hpp"
#include "pipeline/process_image.hpp"
#include "tensors/npy.hpp"

namespace vitattn::serve {

namespace {

// head=all: one map per head, which an answer of one map (or a page opening on one) cannot
// hold; said with the heads it can.
void check_one_head(const ServedModel& served, const MapQuery& query) {
  if (query.head != pipeline::HeadChoice::all) return;
  throw Error({pipeline::roles::head, "all"},
              fmt::format("the server answers one map, not one per head; {} has heads 0…{}: give one of them, or mean, "
                          "max or min",
                          served.name, served.model.n_heads - 1));
}

// class=: the CLI's syntax, resolved by the CLI's function (pipeline/class_choice.hpp) against
// the served model; one class, as the answer (or the page's first map) is one map.
std::vector<pipeline::ChosenClass> chosen_classes(const ServedModel& served, const MapQuery& query) {
  if (!query.classes) return {};
  std::vector<pipeline::ChosenClass> classes =
      pipeline::resolve_classes({*query.classes}, served.labels, served.model.n_classes(), served.name);
  if (classes.size() > 1)
    throw Error({pipeline::roles::class_choice, *query.classes},
                fmt::format("the server answers one class's map; give one of {}", pipeline::class_names(classes)));
  return classes;
}

}  // namespace

pipeline::ProcessOptions map_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels) {
  pipeline::ProcessOptions options;  // the CLI's defaults: PNG, 1/√d_k, the mean of the last layer's heads
  options.max_pixels = max_pixels;
  pipeline::EncoderView& view = options.view;
  view.layer = query.layer;
  view.head = query.head;
  view.head_index = query.head_index;
  view.fusion = query.fusion;
  view.methods = {query.method};
  check_one_head(served, query);
  view.classes = chosen_classes(served, query);
  view.class_names = served.labels.names;
  view.img_size = served.img_size;
  view.layer = pipeline::check_view(served.model, view, served.name);  // resolved, as image_maps takes it
  return options;
}

MapAnswer compute_map(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                      const MapQuery& query, std::uint64_t max_pixels) {
  const pipeline::ProcessOptions options = map_options(served, query, max_pixels);
  const cv::Mat bgr = image::decode_image(image, source, options.max_pixels, options.damage);  // (H, W) 8-bit
  // one map: one method, one class, one head or fusion; as process_image's: the core's errors name no input
  const std::vector<pipeline::NamedMap> maps =
      naming_source(source, [&] { return pipeline::image_maps(bgr, served.model, options); });
  const Matrix& map = maps.front().map;  // (grid_h, grid_w)
  if (query.format == MapFormat::npy) return {tensors::encode_npy(map), "application/octet-stream"};
  // (H, W) BGR, with the class's caption as the CLI's overlay file has it
  const std::vector<Matrix> pixels{maps.front().pixels};  // lrp's, drawn signed as the CLI draws it
  const cv::Mat overlay =
      pipeline::captioned(pipeline::draw_overlays(bgr, {map}, options, nullptr, &pixels).front(), maps.front());
  return {image::encode_image(overlay, options.format), "image/png"};
}

}  // namespace vitattn::serve
