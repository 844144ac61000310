#pragma once
// `vitattn forward --model FILE [OPTIONS] tensors…`: its options and its help. What it does is
// forward_command.hpp's.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "options.hpp"

namespace vitattn::cli {

struct ForwardCommandOptions {
  ModelOptions model;                // --model (required) and the Checkpoints options
  std::vector<std::string> tensors;  // .npy inputs
  std::string output = "vitattn-out";
  bool no_scale = false;
};

// Declares the `forward` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_forward_command(CLI::App& app, ForwardCommandOptions& options, int& verbosity);

// After parsing: `forward` needs --model (a CLI::ValidationError "forward requires --model").
void check_forward(const CLI::App& forward);

}  // namespace vitattn::cli
