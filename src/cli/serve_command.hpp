#pragma once
// `vitattn serve`: the command line's side of serve/server.hpp. Opens each --model as every
// command does (model_request.hpp), decides the token, prints the URL, logs each refused
// request as one line, and stops on Ctrl-C/SIGTERM (interrupt.hpp) after the requests in hand.
#include "serve_options.hpp"

namespace vitattn::cli {

int run_serve(const ServeOptions& options, int verbosity);  // exit status: 0 after a signal

}  // namespace vitattn::cli
