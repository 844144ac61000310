#pragma once
// One map request's work: the uploaded bytes decoded by the loader the CLI reads files with,
// the map made by the pipeline's own steps (process_image.hpp's image_maps, draw_overlays)
// and encoded as the CLI writes it (`_cls.npy`, the overlay `_attn.png`), in memory. No
// second implementation: what differs from a CLI run is only where the bytes go.
#include <cstdint>
#include <string>
#include <vector>

#include "core/vit.hpp"
#include "map_query.hpp"
#include "model/class_labels.hpp"
#include "pipeline/process_image.hpp"

namespace vitattn::serve {

// A model the server was started with: opened once (model/open_model.hpp), read by every worker.
struct ServedModel {
  std::string name;  // "the seeded model", or the file or hub name the user gave
  VitModel model;
  model::ClassLabels labels;
  int img_size = 0;  // the input size every map of it is drawn at (pipeline::EncoderView); 0: its own
};

struct MapAnswer {
  std::vector<std::uint8_t> bytes;
  std::string content_type;  // "application/octet-stream" (.npy) or "image/png"
};

// The query's view as pipeline options, with the CLI's defaults for everything the query does
// not name. Throws Error (with a Subject: pipeline/view.hpp's roles) when the view does not
// fit the model: a layer or head it has not, head=all (one map per head: the answer is one
// map), a class-specific method without a classifier, a class it does not have or several.
pipeline::ProcessOptions map_options(const ServedModel& served, const MapQuery& query, std::uint64_t max_pixels);

// image: the upload's bytes (JPEG, PNG, WebP…), named `source` in errors. Throws Error
// naming `source` for bytes that are no image the CLI reads, an image over max_pixels
// (checked from the header, before decoding: its Subject is image::roles::pixel_limit), or a
// view that does not fit (map_options).
MapAnswer compute_map(const std::vector<std::uint8_t>& image, const std::string& source, const ServedModel& served,
                      const MapQuery& query, std::uint64_t max_pixels);

}  // namespace vitattn::serve
