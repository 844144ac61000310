#pragma once
// --model hf:ORG/NAME[@REVISION]: the cache first, else the hub, with a progress bar on a
// terminal. What open_model calls for a hub name (model/open_model.hpp: HubLocator), so that
// the model library needs neither libcurl nor the environment nor a terminal.
#include "model/open_model.hpp"

namespace vitattn::cli {

// For a hub name: its local weights file (snapshots/<commit>/…), fetched when missing, with
// the hub's settings read from the environment then (environment.hpp); nullopt for any other
// source (a path). `verbosity` < 0 (-q) draws no progress bar. Throws Error in one line.
model::HubLocator hub_locator(int verbosity);

}  // namespace vitattn::cli
