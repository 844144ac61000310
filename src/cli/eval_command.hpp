#pragma once
// `vitattn eval`: the command line's side of pipeline/eval_job.hpp. Opens the model as every
// command does (model_request.hpp), reads --labels-csv against its classes, checks the view,
// runs the evaluation and logs what it says.
#include "eval_options.hpp"

namespace vitattn::cli {

int run_eval_command(const EvalCommandOptions& options, int verbosity);  // exit status

}  // namespace vitattn::cli
