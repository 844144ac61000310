#pragma once
// One map request's work: the uploaded bytes decoded by the loader the CLI reads files with,
// the map made by the pipeline's own steps (process_image.hpp's image_maps, draw_overlays)
// and encoded as the CLI writes it (`_cls.npy`, the overlay `_attn.png`), in memory. No
// second implementation: what differs from a CLI run is only where the bytes go.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/text_tower.hpp"
#include "core/vit.hpp"
#include "map_query.hpp"
#include "model/class_labels.hpp"
#include "pipeline/process_image.hpp"

namespace vitattn::serve {

// A served model's text tower: a report's prompts (text=) become the model's classes, as the
// CLI's --text makes them. The tokenising is the CLI's own (cli/text_prompts.hpp), handed over
// by the serve command, so a prompt is checked by the CLI's rules (an empty text, one over the
// context unless truncating: one Error line naming the parameter).
struct ServedTexts {
  std::shared_ptr<const TextTower> tower;
  using Rows = std::vector<std::vector<std::int32_t>>;
  using Tokens = std::vector<std::vector<std::string>>;
  std::function<Rows(const std::vector<std::string>& texts, bool truncate)> ids;  // each text's row, checked
  std::function<Tokens(const Rows&)> words;  // the word positions' token texts (words.csv's)
  std::function<Tokens(const Rows&)> view;   // positions 0 … the end token's texts (the text attention view)
  std::vector<std::int32_t> legrad_empty;    // SigLIP's empty prompt's ids for LeGrad's correction; CLIP: none
};

// A model the server was started with: opened once (model/open_model.hpp), read by every worker.
struct ServedModel {
  std::string name;  // "the seeded model", or the file or hub name the user gave
  VitModel model;
  model::ClassLabels labels;
  int img_size = 0;  // the input size every map of it is drawn at (pipeline::EncoderView); 0: its own
  std::optional<ServedTexts> texts;  // its text tower, when it has one whose embedding fits the image's
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
