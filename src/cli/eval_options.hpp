#pragma once
// `vitattn eval --model FILE [--masks DIR] [--labels-csv FILE] [--method M[,M…]|all] inputs… -o OUT`:
// its options and its help. What it does is eval_command.hpp's (and pipeline/eval_job.hpp's).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "options.hpp"
#include "scale_out.hpp"
#include "settings_record.hpp"
#include "pipeline/map_methods.hpp"

namespace vitattn::cli {

struct EvalCommandOptions {
  ModelOptions model;                // --model (required) and the Checkpoints options, --img-size, --mean/--std
  std::vector<std::string> inputs;   // images and folders
  std::string output = "vitattn-eval";
  bool recursive = false;
  int jobs = 0;                      // -j: workers; 0: one per core
  std::string masks;                 // --masks DIR: <stem>.png per image, nonzero = object
  std::string labels_csv;            // --labels-csv FILE: file,class rows
  std::vector<std::string> methods;  // --method: names or aliases; "all" (the default): every one the model allows
  int layer = -1;
  double discard_ratio = 0.0;
  int legrad_from = -2;
  double lrp_gamma_linear = vitattn::lrp_default_gamma_linear;  // --lrp-gamma-linear
  double lrp_gamma_conv = vitattn::lrp_default_gamma_conv;      // --lrp-gamma-conv
  bool keep_aspect = false;
  bool no_scale = false;
  bool save_attention = false;       // each map's <name>_cls_<method>.npy
  bool no_sanity = false;            // --no-sanity: leave out the randomisation test
  bool skip_existing = false;        // --skip-existing: read back the parts done with these settings
  ScaleOutOptions scale_out;         // --shard, --shard-count, --files-from, -0, --log-json (scale_out.hpp)
  std::vector<GivenOption> recorded; // the options given that make the outputs' bytes (settings_record.hpp)
};

// Declares the `eval` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_eval_command(CLI::App& app, EvalCommandOptions& options, int& verbosity);

// After parsing: `eval` needs --model and inputs, named or --files-from (a CLI::ValidationError
// naming what is missing). The scale-out options' rules are checked as `eval` is parsed.
void check_eval(const CLI::App& eval);

// --method's names (aliases taken) → the methods, each once, in the table's order for "all":
// every one, those that need a classifier only when `has_classifier`. Empty names: "all".
std::vector<pipeline::MapMethod> eval_methods(const std::vector<std::string>& names, bool has_classifier);

}  // namespace vitattn::cli
