#pragma once
// The image command's options as the pipeline's request (pipeline/run_batch.hpp): the model
// opened, what is drawn and written, the inputs, the files the guard must know of. Everything
// said on the way (a refused choice, a warning about the model, -v's grid) is said here, in
// the order the options are checked; the batch itself is the pipeline's.
#include "core/text_tower.hpp"
#include "core/vit.hpp"
#include "image/image_loader.hpp"
#include "options.hpp"
#include "pipeline/run_batch.hpp"

namespace vitattn::cli {

struct ImageRequest {
  ImageRequest() = default;
  ImageRequest(const ImageRequest&) = delete;  // batch.model points at model
  ImageRequest& operator=(const ImageRequest&) = delete;

  VitModel model;
  TextTower text_tower;  // with texts: their tower, which batch.process.words reads (<name>_words.csv)
  model::ClassLabels labels;  // the classifier's class names (--top, --class, the report's picker)
  pipeline::BatchRequest batch;
};

// Fills `r` from `o`: opens the model, checks the view against it (check_view, once for the
// run), reads --files-from. Throws Error (a usage or model error) before any file is written.
void build_image_request(const ImageOptions& o, ImageRequest& r);

}  // namespace vitattn::cli
