#pragma once
// The command line's side of opening a model: its options as a typed request for open_model
// (model/open_model.hpp), and what open_model says back, logged and worded with the flags.
#include "model/open_model.hpp"
#include "options.hpp"

namespace vitattn::cli {

// --model (a path or hf:…; none: the seeded model of --img-size/--patch-size/--dim/--d-k and
// --seed), --key, --family/--heads/--eps/--gelu/--pos-interp, --mean/--std; `labels` when the
// class names are wanted (--top). Hub names go through hub_fetch.hpp, with a progress bar
// unless `verbosity` < 0.
model::ModelRequest model_request(const ModelOptions& options, int verbosity, bool labels);

// The guessed head count as a warning that names --heads, the details at -v.
void log_opened_model(const ModelOptions& options, const model::OpenedModel& opened);

// Both, around open_model: what images, videos and `forward` call.
model::OpenedModel open_requested_model(const ModelOptions& options, int verbosity, bool labels = false,
                                        bool text_tower = false);

}  // namespace vitattn::cli
