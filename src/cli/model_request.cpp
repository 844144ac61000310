#include "model_request.hpp"

#include <spdlog/spdlog.h>

#include "hub_fetch.hpp"

namespace vitattn::cli {

io::ModelRequest model_request(const Options& o, bool labels) {
  io::ModelRequest r;
  r.source = o.model;
  r.shape = o.shape;
  r.seed = o.seed;
  r.key = o.key;
  r.overrides = o.overrides;
  if (o.mean) r.mean = o.mean->values;
  if (o.std) r.std = o.std->values;
  r.labels = labels;
  r.hub = hub_locator(o.verbosity);
  return r;
}

void log_opened_model(const Options& o, const io::OpenedModel& opened) {
  if (const auto& g = opened.heads_guessed)
    spdlog::warn("{}: the file does not say how many heads it has; assumed D/64 = {} (D = {}). If the model has "
                 "another count, its maps are wrong: give --heads N", o.model, g->heads, g->d_model);
  for (const std::string& line : opened.details) spdlog::debug("{}", line);
}

io::OpenedModel open_model(const Options& o, bool labels) {
  io::OpenedModel opened = io::open_model(model_request(o, labels));
  log_opened_model(o, opened);
  return opened;
}

}  // namespace vitattn::cli
