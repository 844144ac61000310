#pragma once
// `vitattn explain [--heatmap FILE.png] [--html FILE.html]`: its options, its help, and how it runs.
#include <CLI/CLI.hpp>
#include <string>

namespace vitattn::cli {

struct ExplainOptions {
  std::string heatmap;  // --heatmap FILE.png: example (b)'s weights as a PNG
  std::string html;     // --html FILE.html: the worked examples as a page
};

// Declares the `explain` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_explain_command(CLI::App& app, ExplainOptions& options, int& verbosity);

int run_explain(const ExplainOptions& options);  // the exit status

}  // namespace vitattn::cli
