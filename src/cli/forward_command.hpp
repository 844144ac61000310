#pragma once
// `vitattn forward`: the command line's side of pipeline/forward_job.hpp. Maps the options to
// a ForwardRequest, opens the model as every command does (model_request.hpp), and logs each
// input's result.
#include "options.hpp"

namespace vitattn::cli {

int run_forward(const Options& options);  // exit status

}  // namespace vitattn::cli
