#pragma once
// Everything the command line can say, parsed by CLI11 (whose help text is the manual) into
// typed values: a choice is an enum, a number is range- and NaN-checked, here and only here.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zero_shot_classes.hpp"
#include "core/gemm_bf16.hpp"
#include "core/seeded_model.hpp"
#include "image/image_writer.hpp"
#include "image/overlay.hpp"
#include "pipeline/process_image.hpp"
#include "model/vit_loader.hpp"
#include "scale_out.hpp"
#include "settings_record.hpp"

namespace vitattn::cli {

// --head: pipeline::HeadSpec, parsed by pipeline::parse_head (the syntax serve's head= takes too).
using HeadArg = pipeline::HeadSpec;

// --mean/--std: three finite numbers "r,g,b".
struct Rgb {
  std::array<float, 3> values{};
};
std::istream& operator>>(std::istream& in, Rgb& rgb);  // how CLI11 converts (model::parse_rgb_triplet)

// --method: one map method (pipeline/map_methods.hpp), or all of them (those the model
// allows). --rollout is --method rollout: check_combinations folds it in.
struct MethodChoice {
  bool all = false;
  pipeline::MapMethod one = pipeline::MapMethod::attention;  // when not all
  bool is(pipeline::MapMethod m) const { return !all && one == m; }
  std::string name() const;  // "all", or the method's name
};
std::istream& operator>>(std::istream& in, MethodChoice& m);  // how CLI11 converts: a method's name or "all"

// The model a command runs: a file (or hf:ORG/NAME) read with the Checkpoints options, or
// the seeded model made from --seed and its shape. Shared by the image command and `forward`.
struct ModelOptions {
  std::string file;             // --model; empty: the seeded model
  std::string key;              // .pth: the dict holding the weights; empty: the usual ones
  model::VitOverrides overrides;   // --family, --heads, --eps, --gelu, --pos-interp; unset: the file's or family's
  std::uint64_t seed = 0;
  SeededShape shape;
  bool img_size_given = false;  // --img-size was on the command line
  std::optional<Rgb> mean, std;  // overrides of the model's normalisation
};

// The image command: `vitattn [OPTIONS] inputs…`.
struct ImageOptions {
  std::vector<std::string> inputs;
  std::string output = "vitattn-out";
  bool recursive = false;
  bool skip_existing = false;  // resume: leave out inputs whose outputs are all there
  int jobs = 0;  // 0: all cores
  ScaleOutOptions scale_out;  // --shard, --files-from, --log-json (scale_out.hpp)
  ModelOptions model;
  Precision precision = Precision::fp32;  // --precision: the weight products' (core/gemm_bf16.hpp)
  std::string save_model;
  bool save_attention = false;
  bool report = false;         // also <name>_report.html (and index.html for a batch)
  double report_max_mb = 16;   // the page's attention data budget
  report::ReportPrecision report_precision = report::ReportPrecision::u8;  // --report-precision u8 | f16
  bool no_scale = false;
  image::RenderOptions render;     // --interp, --colormap, --alpha
  image::OutputFormat format;      // --format, --quality
  std::uint64_t max_pixels = 100'000'000;
  bool strict = false;          // damaged-but-decodable images fail instead of a warning
  // What is drawn from a checkpoint (and from the seeded model)
  int layer = -1;
  int top = 0;                  // --top K: the K most likely classes per image; 0: none
  bool faithfulness = false;    // --faithfulness: deletion/insertion AUCs into faithfulness.csv
  int faithfulness_steps = 16;  // --faithfulness-steps K
  HeadArg head;                 // default: mean over heads
  pipeline::QueryToken query = pipeline::QueryToken::cls;  // --query cls | dist
  bool rollout = false;         // --rollout, as given (method holds it after check_combinations)
  MethodChoice method;          // --method, with --rollout folded in
  std::vector<std::string> classes;  // --class: indices or labels (class_choice.hpp); empty: each image's top-1
  int legrad_from = -2;         // --legrad-from
  std::optional<int> first_layer;  // --first-layer: Chefer's and LeGrad's first layer
  double lrp_gamma_linear = vitattn::lrp_default_gamma_linear;  // --lrp-gamma-linear
  double lrp_gamma_conv = vitattn::lrp_default_gamma_conv;      // --lrp-gamma-conv
  // Texts as the classes (CLIP, SigLIP): the prompts the class-specific maps are about
  std::vector<std::string> texts;  // --text, in the order given
  std::string texts_from;          // --texts-from FILE: one text per line, after --text's
  bool truncate = false;           // --truncate: a text over the context is cut, not refused
  bool no_legrad_correction = false;  // --no-legrad-correction: SigLIP's LeGrad without the empty prompt's
  ClassListOptions classes_from_words;  // --labels, --templates, --no-text-cache: zero-shot classes (CLIP)
  double discard_ratio = 0.0;
  std::optional<double> threshold;  // no mass mask unless given
  bool keep_aspect = false;
  int verbosity = 0;  // -q: −1, -v: +1; the subcommands' -q and -v count here too
  // Tokens (core/token_diagnostics.hpp): norms, artifacts, sinks, registers, PCA, head statistics
  double artifact_ratio = 3.0;  // --artifact-ratio R: flagged above R × the layer's median patch norm
  bool clean = false;           // --clean: the drawn maps leave out the flagged tokens
  bool heads_csv = false;       // --heads-csv: <out>/heads.csv (also with --save-attention)
  bool pca = false;             // --pca: <name>_pca.png
  std::optional<double> pca_mask;   // --pca-mask T: blank the patches whose first component is below T
  std::string pca_fit = "image";    // --pca-fit image | batch | FILE
  // Videos (process_video.hpp)
  bool frames_dir = false;           // --frames-dir: each frame's overlay as a PNG too
  int every = 1;                     // --every N
  std::int64_t max_frames = 0;       // --max-frames M; 0: all
  std::optional<double> smooth;      // --smooth A: EMA weight of the newest map
  // The options given that may change an output's bytes, as written: for each job's settings
  // record (settings_record.hpp).
  std::vector<GivenOption> recorded;
};

// The option groups, each declared by one function on `app` and bound to its struct, with
// the rules between two options (excludes/needs) stated on the options themselves. The
// subcommands (explain_command.hpp, forward_options.hpp) take the groups they share from here.

// The program's description, its examples and exit statuses (the footer), --version.
void describe_program(CLI::App& app);
// inputs, -o, -r, --skip-existing, -j.
void add_input_options(CLI::App& app, ImageOptions& o);
// "Model": --model, --seed, --img-size, the seeded shape, --mean/--std, --save-model, --no-scale.
// Returns --model, for the options that need it.
CLI::Option* add_model_options(CLI::App& app, ImageOptions& o);
// --model alone (for a subcommand that always reads a file): the same check and help.
CLI::Option* add_model_file_option(CLI::App& app, ModelOptions& m);
// --img-size, and --mean and --std ("Model"): the image command declares them among the
// options above; `serve` per model (serve_options.hpp). Return what they declared.
CLI::Option* add_img_size_option(CLI::App& app, ModelOptions& m);
std::vector<CLI::Option*> add_normalisation_options(CLI::App& app, ModelOptions& m);
// "Checkpoints", how to read the file: --key, --family, --heads, --eps, --gelu, --pos-interp.
// Each but --pos-interp needs `model`. Returns them, in that order.
std::vector<CLI::Option*> add_checkpoint_options(CLI::App& app, ModelOptions& m, CLI::Option* model);
// What is drawn: --top ("Checkpoints": it needs a classifier); --layer, --head, --rollout,
// --discard-ratio, --keep-aspect ("View (any model)": the seeded head is a one-layer ViT too);
// --method, --class, --legrad-from ("Why the model decided": the class-specific maps).
void add_view_options(CLI::App& app, ImageOptions& o);
// "Output": --threshold, --save-attention, --report…, --interp, --colormap, --alpha, --format,
// --quality, --max-pixels, --strict.
void add_output_options(CLI::App& app, ImageOptions& o);
// "Tokens (any model)": --artifact-ratio, --clean, --heads-csv, --pca, --pca-mask, --pca-fit.
void add_token_options(CLI::App& app, ImageOptions& o);
// "Video": --frames-dir, --every, --max-frames, --smooth.
void add_video_options(CLI::App& app, ImageOptions& o);
// --precision fp32 | bf16 ("Model"; the image command, `forward`, `serve`): the forward's weight
// products (core/gemm_bf16.hpp), set for the run by precision_option.hpp's use_precision.
CLI::Option* add_precision_option(CLI::App& app, Precision& precision);
// -q and -v, counted into `verbosity` (shared by the main command and its subcommands).
void add_verbosity_options(CLI::App& app, int& verbosity);

// The image command's options on `app`: every group above, in the help's order.
void add_options(CLI::App& app, ImageOptions& options);

// The methods --method names: one, or with "all" every one (those that need a classifier only
// when `has_classifier`).
std::vector<pipeline::MapMethod> chosen_methods(const ImageOptions& o, bool has_classifier);

// Rules that depend on an option's value rather than on its presence; throws CLI::ValidationError.
// Folds --rollout into options.method first (refusing it beside another --method).
void check_combinations(const CLI::App& app, ImageOptions& options);

// A validator of a file to read: "no such file" rather than a message about its contents.
const CLI::Validator& readable_file();

// A validator of a model source: a readable file, or hf:ORG/NAME[@REVISION] (its form).
const CLI::Validator& model_source();

// A validator of a name that must not be empty.
const CLI::Validator& non_empty();

// A validator of a finite number in [lo, hi] (CLI::Range alone lets NaN through).
CLI::Validator finite_in(double lo, double hi);

// --lrp-gamma-linear and --lrp-gamma-conv (AttnLRP's γs, core/lrp.hpp) into `linear` and
// `conv`, in `group`: the image command's and forward's.
std::array<CLI::Option*, 2> add_lrp_gamma_options(CLI::App& app, double& linear, double& conv, const std::string& group);

}  // namespace vitattn::cli
