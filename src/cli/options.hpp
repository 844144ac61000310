#pragma once
// Everything the command line can say, parsed by CLI11 (whose help text is the manual).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <set>
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
  bool report = false;         // also <name>_report.html (and index.html for a batch)
  double report_max_mb = 16;   // the page's attention data budget
  bool no_scale = false;
  std::string interp = "linear";
  std::string colormap = "jet";
  double alpha = 0.5;
  std::string format = "png";  // png | jpg | webp
  int quality = 90;            // jpg and webp only
  std::uint64_t max_pixels = 100'000'000;
  bool strict = false;         // damaged-but-decodable images fail instead of a warning
  // Encoder checkpoints
  std::string key;             // .pth: the dict holding the weights; empty: the usual ones
  std::string family;          // empty: recognised from the tensor names
  int heads = 0;               // 0: from the file, else D/64
  double eps = 0;              // 0: the family's
  std::string gelu;            // empty: the family's
  std::string pos_interp;      // empty: the family's
  int layer = -1;
  std::string head = "mean";   // h | mean | max | min | all
  bool rollout = false;
  double discard_ratio = 0.0;
  double threshold = 0.0;      // 0: no mass mask
  bool keep_aspect = false;
  bool img_size_given = false; // --img-size was on the command line
  std::set<std::string> given; // long names of the options on the command line
  int verbosity = 0;  // -q: −1, -v: +1
  bool explain = false;
  std::string explain_heatmap;
  std::string explain_html;    // explain --html FILE: the worked examples as a page
  bool forward = false;        // the `forward` subcommand: preprocessed .npy tensors in, arrays out
  std::vector<std::string> forward_inputs;
};

// Declares every option on `app`, bound to `options`.
void add_options(CLI::App& app, Options& options);

// Rules between options that CLI11 cannot state one option at a time; throws CLI::ValidationError.
void check_combinations(const CLI::App& app, const Options& options);

}  // namespace vitattn::cli
