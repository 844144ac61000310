#pragma once
// The command line's side of opening a model: its options as a typed request for open_model
// (model/open_model.hpp), and what open_model says back, logged and worded with the flags.
#include "model/open_model.hpp"
#include "options.hpp"

namespace vitattn::cli {

// --model (a path or hf:…; none: the seeded model of --img-size/--patch-size/--dim/--d-k and
// --seed), --key, --family/--heads/--eps/--gelu/--pos-interp, --mean/--std; `labels` when the
// class names are wanted (--top). Hub names go through hub_fetch.hpp.
io::ModelRequest model_request(const Options& options, bool labels);

// The guessed head count as a warning that names --heads, the details at -v.
void log_opened_model(const Options& options, const io::OpenedModel& opened);

// Both, around open_model: what images, videos and `forward` call.
io::OpenedModel open_model(const Options& options, bool labels = false);

}  // namespace vitattn::cli
