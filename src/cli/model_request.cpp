#include "model_request.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "hub_fetch.hpp"
#include "model/rgb_triplet.hpp"

namespace vitattn::cli {

model::ModelRequest model_request(const ModelOptions& o, int verbosity, bool labels) {
  model::ModelRequest r;
  r.source = o.file;
  r.shape = o.shape;
  r.seed = o.seed;
  r.key = o.key;
  r.overrides = o.overrides;
  if (o.mean) r.mean = o.mean->values;
  if (o.std) r.std = o.std->values;
  r.labels = labels;
  r.hub = hub_locator(verbosity);
  return r;
}

void log_opened_model(const ModelOptions& o, const model::OpenedModel& opened) {
  if (const auto& g = opened.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.file, g->heads, g->d_model);
  if (const auto& h = opened.heads_overridden)
    spdlog::warn("{}: --heads {} overrides the {} heads {} gives", o.file, h->asked, h->said, h->by);
  // Pixels are scaled to 0…1 before the mean is taken off: a mean above 1 is on the 0–255 scale.
  if (o.mean && std::any_of(o.mean->values.begin(), o.mean->values.end(), [](float v) { return v > 1.0f; }))
    spdlog::warn("--mean {}: above 1, on the 0–255 scale? Pixels are scaled to 0…1 first, x = (u8/255 − mean) / std: "
                 "give the mean and std divided by 255", model::format_rgb_triplet(o.mean->values));
  for (const std::string& line : opened.details) spdlog::debug("{}", line);
}

model::OpenedModel open_requested_model(const ModelOptions& o, int verbosity, bool labels, bool text_tower) {
  model::ModelRequest request = model_request(o, verbosity, labels);
  request.text_tower = text_tower;
  model::OpenedModel opened = model::open_model(request);
  log_opened_model(o, opened);
  return opened;
}

}  // namespace vitattn::cli
