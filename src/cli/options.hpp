#pragma once
// Everything the command line can say, parsed by CLI11 (whose help text is the manual) into
// typed values: a choice is an enum, a number is range- and NaN-checked, here and only here.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/seeded_model.hpp"
#include "image/image_writer.hpp"
#include "image/overlay.hpp"
#include "pipeline/process_image.hpp"
#include "model/vit_loader.hpp"
#include "scale_out.hpp"

namespace vitattn::cli {

// --head: one head by index, the heads fused (mean|max|min), or all of them.
struct HeadArg {
  pipeline::HeadChoice choice = pipeline::HeadChoice::fuse;
  int index = 0;                         // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;  // with HeadChoice::fuse
};
// "3", "mean", "MAX", "all" → HeadArg; nullopt for anything else (a sign, "nan", "1.5", 6+ digits).
std::optional<HeadArg> parse_head(std::string_view text);
std::string to_string(const HeadArg& head);  // as --head takes it: "3", "mean", "all"
std::istream& operator>>(std::istream& in, HeadArg& head);  // how CLI11 converts (parse_head)

// --mean/--std: three finite numbers "r,g,b".
struct Rgb {
  std::array<float, 3> values{};
};
std::istream& operator>>(std::istream& in, Rgb& rgb);  // how CLI11 converts (io::parse_rgb_triplet)

struct Options {
  std::vector<std::string> inputs;
  std::string output = "vitattn-out";
  bool recursive = false;
  bool skip_existing = false;  // resume: leave out inputs whose outputs are all there
  int jobs = 0;  // 0: all cores
  ScaleOutOptions scale_out;  // --shard, --files-from, --log-json (scale_out.hpp)
  std::string model;
  std::uint64_t seed = 0;
  SeededShape shape;
  std::optional<Rgb> mean, std;  // overrides of the model's normalisation
  std::string save_model;
  bool save_attention = false;
  bool report = false;         // also <name>_report.html (and index.html for a batch)
  double report_max_mb = 16;   // the page's attention data budget
  io::ReportPrecision report_precision = io::ReportPrecision::u8;  // --report-precision u8 | f16
  bool no_scale = false;
  io::RenderOptions render;     // --interp, --colormap, --alpha
  io::OutputFormat format;      // --format, --quality
  std::uint64_t max_pixels = 100'000'000;
  bool strict = false;          // damaged-but-decodable images fail instead of a warning
  // Encoder checkpoints
  std::string key;              // .pth: the dict holding the weights; empty: the usual ones
  io::VitOverrides overrides;   // --family, --heads, --eps, --gelu, --pos-interp; unset: the file's or family's
  int layer = -1;
  int top = 0;                  // --top K: the K most likely classes per image; 0: none
  HeadArg head;                 // default: mean over heads
  bool rollout = false;
  double discard_ratio = 0.0;
  std::optional<double> threshold;  // no mass mask unless given
  bool keep_aspect = false;
  bool img_size_given = false;  // --img-size was on the command line
  std::set<std::string> given;  // long names of the options on the command line
  int verbosity = 0;  // -q: −1, -v: +1
  bool explain = false;
  std::string explain_heatmap;
  std::string explain_html;     // explain --html FILE: the worked examples as a page
  // Videos (process_video.hpp)
  bool frames_dir = false;           // --frames-dir: each frame's overlay as a PNG too
  int every = 1;                     // --every N
  std::int64_t max_frames = 0;       // --max-frames M; 0: all
  std::optional<double> smooth;      // --smooth A: EMA weight of the newest map
  bool forward = false;         // the `forward` subcommand: preprocessed .npy tensors in, arrays out
  std::vector<std::string> forward_inputs;
};

// Options that describe how to read a model file: each needs --model (CLI11). The views
// (--layer, --head, --rollout, --keep-aspect, --pos-interp …) work on the seeded model too.
inline constexpr std::array<const char*, 4> kFileOnly = {"--family", "--heads", "--eps", "--gelu"};

// Declares every option on `app`, bound to `options`, with the rules between two options
// (excludes/needs) stated on the options themselves.
void add_options(CLI::App& app, Options& options);

// Rules that depend on an option's value rather than on its presence; throws CLI::ValidationError.
void check_combinations(const CLI::App& app, const Options& options);

}  // namespace vitattn::cli
