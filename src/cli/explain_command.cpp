#include "explain_command.hpp"

#include <iostream>

#include "explain.hpp"
#include "options.hpp"

namespace vitattn::cli {

CLI::App* add_explain_command(CLI::App& app, ExplainOptions& o, int& verbosity) {
  CLI::App* explain = app.add_subcommand("explain", "Walk through the worked examples of attention, step by step");
  explain->footer(
      "Every matrix of weights = softmax(Q·Kᵀ/√d_k) and output = weights·V is printed, on four small\n"
      "examples: (a) one query against three keys, (b) self-attention over four tokens, (c) why the\n"
      "scores are divided by √d_k, (d) the causal mask.\n"
      "Examples:\n"
      "  vitattn explain                            the examples, printed\n"
      "  vitattn explain --heatmap b.png            and example (b)'s weights as a heatmap\n"
      "  vitattn explain --html attention.html      and the examples as a page to step through\n"
      "Exit status: 0 done; 2 usage error, or an output that would replace another kind of file.");
  explain->add_option("--heatmap", o.heatmap, "Also write example (b)'s weight matrix as a PNG heatmap")
      ->type_name("FILE.png")
      ->check(non_empty());
  explain->add_option("--html", o.html,
                      "Also write the examples as an offline page: step through them, toggle the mask, edit Q, K and V")
      ->type_name("FILE.html")
      ->check(non_empty());
  add_verbosity_options(*explain, verbosity);
  return explain;
}

int run_explain(const ExplainOptions& o) { return explain(std::cout, o.heatmap, o.html); }

}  // namespace vitattn::cli
