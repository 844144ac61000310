#pragma once
// Everything the command line can say, parsed by CLI11 (whose help text is the manual).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/seeded_model.hpp"

namespace vitattn::cli {

struct Options {
  std::vector<std::string> inputs;
  std::string output = "vitattn-out";
  bool recursive = false;
  bool skip_existing = false;  // resume: leave out inputs whose outputs are all there
  int jobs = 0;  // 0: all cores
  std::string model;
  std::uint64_t seed = 0;
  SeededShape shape;
  std::string mean, std;  // "r,g,b" overrides, empty when not given
  std::string save_model;
  bool save_attention = false;
  bool no_scale = false;
  std::string interp = "linear";
  std::string colormap = "jet";
  double alpha = 0.5;
  std::uint64_t max_pixels = 100'000'000;
  int verbosity = 0;  // -q: −1, -v: +1
  bool explain = false;
  std::string explain_heatmap;
};

// Declares every option on `app`, bound to `options`.
void add_options(CLI::App& app, Options& options);

// Rules between options that CLI11 cannot state one option at a time; throws CLI::ValidationError.
void check_combinations(const CLI::App& app, const Options& options);

}  // namespace vitattn::cli
