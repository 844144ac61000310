#include "options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <istream>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/normalization_limits.hpp"
#include "files/text.hpp"
#include "model/checkpoint_families.hpp"
#include "hub/hf_cache.hpp"
#include "model/rgb_triplet.hpp"
#include "image/overlay.hpp"
#include "pipeline/view.hpp"

namespace vitattn::cli {
namespace {

// Caps on what the options may ask for, so that a typo cannot ask for gigabytes per worker.
constexpr int kMaxImgSize = 4096;              // S: a 4096² input is 200 MB of floats
constexpr int kMaxSeededWidth = 8192;          // D and d_k of the seeded model
constexpr std::uint64_t kMaxSeededWeights = std::uint64_t{1} << 27;  // 512 MiB of floats

// The seeded model's shape: S a multiple of P, no more patches than a checkpoint may have
// (pipeline::kMaxPatches), and weights that fit the cap. Checked before anything is allocated.
void check_seeded_shape(const SeededShape& s) {
  const std::string shape = fmt::format("seeded model (--img-size {}, --patch-size {})", s.img_size, s.patch_size);
  if (s.img_size % s.patch_size != 0)
    throw CLI::ValidationError(shape + ": the image size is not a multiple of the patch size");
  const auto grid = static_cast<std::uint64_t>(s.img_size / s.patch_size);
  if (grid * grid > static_cast<std::uint64_t>(pipeline::kMaxPatches))
    throw CLI::ValidationError(fmt::format("{}: {} patches, over the cap of {} (64×64); use a larger --patch-size or a "
                                           "smaller --img-size", shape, grid * grid, pipeline::kMaxPatches));
  // w_patch (D, 3P²) + pos_embed (1 + N, D) + cls (D) + q, k, v (d_k, D)
  const auto d = static_cast<std::uint64_t>(s.d_model), p = static_cast<std::uint64_t>(s.patch_size);
  const std::uint64_t weights = d * 3 * p * p + (2 + grid * grid) * d + 3 * static_cast<std::uint64_t>(s.d_k) * d;
  if (weights > kMaxSeededWeights)
    throw CLI::ValidationError(fmt::format("{} with --dim {} and --d-k {}: {} Mi weights, over the cap of {} Mi", shape,
                                           s.d_model, s.d_k, weights >> 20, kMaxSeededWeights >> 20));
}

}  // namespace

std::istream& operator>>(std::istream& in, Rgb& rgb) {
  std::string text;
  std::getline(in, text);
  try {
    rgb.values = model::parse_rgb_triplet(text, "value");
  } catch (const Error&) {
    in.setstate(std::ios::failbit);
  }
  return in;
}

std::string MethodChoice::name() const { return all ? "all" : pipeline::method_name(one); }

std::istream& operator>>(std::istream& in, MethodChoice& m) {
  std::string text;
  std::getline(in, text);
  if (text == "all") {
    m.all = true;
  } else if (const std::optional<pipeline::MapMethod> one = pipeline::method_named(text)) {
    m.all = false;
    m.one = *one;
  } else {
    in.setstate(std::ios::failbit);
  }
  return in;
}

std::vector<pipeline::MapMethod> chosen_methods(const ImageOptions& o, bool has_classifier) {
  std::vector<pipeline::MapMethod> methods;
  for (pipeline::MapMethod m : pipeline::every_method())
    if (o.method.is(m) || (o.method.all && (has_classifier || !pipeline::needs_classifier(m)))) methods.push_back(m);
  return methods;
}

namespace {

// --rollout is --method rollout: folded into o.method, once; refused beside another --method.
void fold_rollout(const CLI::App& app, ImageOptions& o) {
  if (!o.rollout) return;
  if (app.count("--method") > 0 && !o.method.is(pipeline::MapMethod::rollout))
    throw CLI::ValidationError(fmt::format("--rollout is --method rollout; not with --method {}", o.method.name()));
  o.method = MethodChoice{false, pipeline::MapMethod::rollout};
}

// --method's rules: --head all, --class, --legrad-from, --discard-ratio and the γs each with the
// methods they are for.
void check_method(const CLI::App& app, const ImageOptions& o) {
  const MethodChoice& method = o.method;
  const bool all = method.all;
  if ((method.is(pipeline::MapMethod::rollout) || all) && o.head.choice != pipeline::HeadChoice::fuse)
    throw CLI::ValidationError(fmt::format("{} fuses heads with --head mean, max or min, not \"{}\"",
                                           all ? "--method all draws rollout, which" : "--rollout", pipeline::head_text(o.head)));
  if (!method.is(pipeline::MapMethod::attention) && o.head.choice == pipeline::HeadChoice::all)
    throw CLI::ValidationError(fmt::format("--head all draws one map per head of --method attention, not of --method {}",
                                           method.name()));
  const bool class_specific = all || pipeline::class_specific(method.one);
  if (!all && class_specific && app.count("--head") > 0)
    throw CLI::ValidationError(fmt::format("--head picks the heads of --method attention and rollout; --method {} uses "
                                           "every head", method.name()));
  if (!o.classes.empty() && !class_specific)
    throw CLI::ValidationError(fmt::format("--class is for the class-specific methods ({}, all); --method {} draws the "
                                           "same map for every class",
                                           pipeline::method_names(pipeline::class_specific_methods(), ", "),
                                           method.name()));
  if (app.count("--first-layer") > 0 && !all && !method.is(pipeline::MapMethod::legrad) &&
      !method.is(pipeline::MapMethod::chefer))
    throw CLI::ValidationError(fmt::format("--first-layer is for --method chefer and legrad (or all), not {}", method.name()));
  if (app.count("--legrad-from") > 0 && !all && !method.is(pipeline::MapMethod::legrad))
    throw CLI::ValidationError(fmt::format("--legrad-from is for --method legrad (or all), not {}", method.name()));
  for (const char* gamma : {"--lrp-gamma-linear", "--lrp-gamma-conv"})
    if (app.count(gamma) > 0 && !all && !method.is(pipeline::MapMethod::lrp))
      throw CLI::ValidationError(fmt::format("{} is for --method lrp (or all), not {}", gamma, method.name()));
  if (app.count("--discard-ratio") > 0 && !all && !method.is(pipeline::MapMethod::rollout) &&
      !method.is(pipeline::MapMethod::grad_rollout))
    throw CLI::ValidationError(
        fmt::format("--discard-ratio is for --method rollout and grad-rollout (or all), not {}", method.name()));
}

// Texts make legrad the default method (LeGrad's own CLIP and SigLIP use); --truncate is for them.
void check_texts(const CLI::App& app, ImageOptions& o) {
  const bool texts = !o.texts.empty() || !o.texts_from.empty();
  if (o.truncate && !texts) throw CLI::ValidationError("--truncate is for --text and --texts-from");
  if (o.no_legrad_correction && !texts && o.classes_from_words.labels.empty())
    throw CLI::ValidationError("--no-legrad-correction is for --text, --texts-from and --labels");
  if (texts && app.count("--method") == 0 && !o.rollout) o.method = MethodChoice{false, pipeline::kTextsMethod};
  if (texts && !o.classes_from_words.labels.empty())
    throw CLI::ValidationError("--labels and --text: one or the other (the texts are the classes, or the labels are)");
}

}  // namespace

void check_combinations(const CLI::App& app, ImageOptions& o) {
  if (o.model.file.empty()) check_seeded_shape(o.model.shape);
  if (app.count("--quality") > 0 && o.format.format == image::ImageFormat::png)
    throw CLI::ValidationError("--quality is for --format jpg and webp; PNG is lossless");
  fold_rollout(app, o);
  check_texts(app, o);
  check_method(app, o);
}

// A finite number in [lo, hi]. CLI::Range alone lets NaN through (every comparison with NaN
// is false), and `--alpha nan` would draw black overlays.
CLI::Validator finite_in(double lo, double hi) {
  const std::string range = fmt::format("in [{}, {}]", lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return fmt::format("expected a number, got \"{}\"", s);
        if (!std::isfinite(v)) return fmt::format("must be a finite number {}, got {}", range, s);
        if (v < lo || v > hi) return fmt::format("{} is not {}", s, range);
        return {};
      },
      range, "finite_in");
}

namespace {

// --smooth: the EMA weight a of the newest map, 0 < a ≤ 1 (a = 0 would freeze the first frame).
const CLI::Validator kSmoothWeight(
    [](std::string& s) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v)) return fmt::format("expected a number, got \"{}\"", s);
      if (!std::isfinite(v) || !(v > 0.0 && v <= 1.0)) return fmt::format("{} is not in (0, 1]", s);
      return {};
    },
    "in (0, 1]", "smooth weight");

// --seed: a whole number ≥ 0 (CLI11 would read "-1" as 2^64 − 1).
const CLI::Validator kUnsigned(
    [](std::string& s) -> std::string {
      if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
        return fmt::format("expected a whole number ≥ 0, got \"{}\"", s);
      return {};
    },
    "", "unsigned");

// A path to read: "no such file" rather than a message about its contents.
const CLI::Validator kReadableFile(
    [](std::string& s) -> std::string {
      std::error_code ec;
      const auto st = std::filesystem::status(s, ec);
      if (s.empty()) return "empty file name";
      if (!std::filesystem::exists(st)) return fmt::format("{}: no such file", s);
      if (std::filesystem::is_directory(st)) return fmt::format("{}: is a folder, not a file", s);
      if (!std::filesystem::is_regular_file(st)) return fmt::format("{}: not a regular file", s);
      return {};
    },
    "", "file");

// --model: a file, or a hub model hf:ORG/NAME[@REVISION] (its form checked here, fetched later).
const CLI::Validator kModelSource(
    [](std::string& s) -> std::string {
      if (!hub::is_hf_model(s)) return kReadableFile(s);
      try {
        hub::parse_hf_model(s);
      } catch (const Error& e) {
        return e.what();
      }
      return {};
    },
    "", "file");

const CLI::Validator kNonEmpty([](std::string& s) -> std::string { return s.empty() ? "empty name" : std::string(); },
                               "", "non-empty");

// --mean/--std: three finite numbers "r,g,b"; each std positive. The message the Rgb
// conversion could not give; the values are parsed by the same function.
CLI::Validator rgb_triplet(bool positive) {
  return CLI::Validator(
      [positive](std::string& s) -> std::string {
        try {
          const auto v = model::parse_rgb_triplet(s, "value");
          if (positive && !(v[0] > 0 && v[1] > 0 && v[2] > 0))
            return fmt::format("each value must be positive, got \"{}\"", s);
          // normalization_limits.hpp: what can be a normalisation of pixels in 0…1
          if (positive && !(plausible_std(v[0]) && plausible_std(v[1]) && plausible_std(v[2])))
            return fmt::format("each value must be at least {:g} (pixels are in 0…1), got \"{}\"", kMinStd, s);
          if (!positive && !(plausible_mean(v[0]) && plausible_mean(v[1]) && plausible_mean(v[2])))
            return fmt::format("each value must be within ±{:g} (pixels are in 0…1), got \"{}\"", kMaxAbsMean, s);
        } catch (const Error&) {
          return fmt::format("expected three finite numbers \"r,g,b\", got \"{}\"", s);
        }
        return {};
      },
      "", "rgb");
}

// --head: a head index or one of mean|max|min|all (parse_head).
const CLI::Validator kHeadChoice(
    [](std::string& s) -> std::string {
      if (pipeline::parse_head(s)) return {};
      return fmt::format("expected {}; got \"{}\"", pipeline::kHeadSyntax, s);
    },
    "", "head choice");

// Other names users type for a choice, each → the choice's own name: "jpeg" → "jpg".
using Aliases = std::vector<std::pair<std::string, std::string>>;

// Every option that is a choice among names goes through here: any case, the common aliases,
// into its enum (or other value). The alias Transformer runs first and passes other words
// through; IsMember lists the names in the help and the error, and lets only them through (so
// that CheckedTransformer, which also takes a mapped value such as "2", sees names only);
// CheckedTransformer converts.
template <typename T>
void choose_from(CLI::Option* option, const std::vector<std::pair<std::string, T>>& choices, const Aliases& aliases = {}) {
  std::vector<std::string> names;
  for (const auto& c : choices) names.push_back(c.first);
  option->transform(CLI::CheckedTransformer(choices, CLI::ignore_case).description(""));
  option->transform(CLI::IsMember(names, CLI::ignore_case));  // transforms added later run first
  if (!aliases.empty()) option->transform(CLI::Transformer(aliases, CLI::ignore_case).description(""));
  option->type_name("TEXT");  // not CLI11's "ENUM"
}

// A choice whose value is its name (the checkpoint families).
std::vector<std::pair<std::string, std::string>> named(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : names) out.emplace_back(n, n);
  return out;
}

std::vector<std::pair<std::string, int>> colormaps() {
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& name : image::colormap_names()) out.emplace_back(name, *image::colormap_by_name(name));
  return out;
}

std::vector<std::pair<std::string, PosInterp>> pos_interps() {
  std::vector<std::pair<std::string, PosInterp>> out;
  for (PosInterp p : {PosInterp::bicubic, PosInterp::antialias, PosInterp::offset, PosInterp::align_corners})
    out.emplace_back(model::pos_interp_name(p), p);
  return out;
}

// --class: each value indices or labels (pipeline/class_choice.hpp splits it), never empty.
const CLI::Validator kClassChoice([](std::string& s) -> std::string { return s.empty() ? "empty class" : std::string(); },
                                  "", "class");

// "Why the model decided": --method, --class, --legrad-from.
}  // namespace

std::array<CLI::Option*, 2> add_lrp_gamma_options(CLI::App& app, double& linear, double& conv, const std::string& group) {
  CLI::Option* on_linear = app.add_option("--lrp-gamma-linear", linear, "lrp: the Gamma rule's γ on every linear layer");
  CLI::Option* on_conv = app.add_option("--lrp-gamma-conv", conv, "lrp: the Gamma rule's γ on the patch embedding");
  for (CLI::Option* option : {on_linear, on_conv}) option->capture_default_str()->check(finite_in(0.0, 1e6))->group(group);
  return {on_linear, on_conv};
}

namespace {

void add_method_options(CLI::App& app, ImageOptions& o) {
  const std::string group = "Why the model decided (checkpoints with a classifier)";
  std::vector<std::pair<std::string, std::string>> methods;
  for (pipeline::MapMethod m : pipeline::every_method()) methods.emplace_back(pipeline::method_name(m), pipeline::method_name(m));
  methods.emplace_back("all", "all");  // each choice's value its name: MethodChoice's operator>> reads it
  choose_from(app.add_option("--method", o.method,
                             "What the map shows: attention (the class token's, --layer and --head), rollout (of "
                             "attention over layers 0…--layer), or where the model sees class C from the gradient of its "
                             "logit: chefer (Chefer et al. 2021), grad-rollout (vit-explain's gradient rollout, fixed), "
                             "legrad (LeGrad, 2025), gradcam (Grad-CAM on the last block's norm1), lrp (AttnLRP, signed "
                             "relevance at the pixels); all: every method the "
                             "model allows, <name>_attn_<method>.png each beside a sheet of them as <name>_attn.png")
                  ->default_str(o.method.name())
                  ->group(group),
              methods, pipeline::method_aliases());
  app.add_option("--class", o.classes,
                 "Class-specific methods: the class C, by index or label; a comma list draws one map per class, "
                 "<name>_attn_c<C>.png each beside a sheet of them (default: each image's or frame's most likely "
                 "class). A label matches as typed, whole or as one of its comma-separated names (\"puma\" for "
                 "\"cougar, puma, catamount\"), else in any case; two classes matching alike are refused, with their "
                 "indices. A value that is exactly one label with commas is that label, whole. Spaces around "
                 "items are ignored; the overlay of a class's map is captioned with its name")
      ->expected(1)
      ->allow_extra_args(false)  // one word a time: `--class 3 img.png` leaves the image an input
      ->take_all()   // --class 3 --class 5 is --class 3,5
      ->type_name("C[,C...]")
      ->check(kClassChoice)
      ->group(group);
  app.add_option("--legrad-from", o.legrad_from,
                 "LeGrad: the first layer summed, up to --layer (default -2: the last two; negative counts from the end)")
      ->type_name("L")
      ->check(CLI::Range(-4096, 4095))
      ->group(group);
  app.add_option("--first-layer", o.first_layer,
                 "chefer and legrad: the first layer of the rollout and of the sum, up to --layer (negative counts from "
                 "the end). Defaults: legrad -2; chefer 0 (every layer, the paper's), with --text -1 (the last, as the "
                 "authors' CLIP notebook)")
      ->type_name("L")
      ->check(CLI::Range(-4096, 4095))
      ->excludes("--legrad-from")
      ->group(group);
  add_lrp_gamma_options(app, o.lrp_gamma_linear, o.lrp_gamma_conv, group);
}

// "Ask in words": --text, --texts-from, --truncate.
void add_text_options(CLI::App& app, ImageOptions& o) {
  const std::string group = "Ask in words (CLIP and SigLIP checkpoints with their text tower)";
  app.add_option("--text", o.texts,
                 "A text prompt (\"a photo of a cat\"); repeat for several. The texts become the model's classes: each "
                 "class-specific map is about one text's image-text logit (default --method legrad), one map per "
                 "text, <name>_attn_t<i>.png beside a sheet of them when there are several (i in the order given); "
                 "--top ranks the texts")
      ->type_name("TEXT")
      ->allow_extra_args(false)
      ->group(group);
  app.add_option("--texts-from", o.texts_from, "Texts from a UTF-8 file, one per line (blank lines left out), after --text's")
      ->type_name("FILE")
      ->check(CLI::ExistingFile)
      ->group(group);
  app.add_flag("--truncate", o.truncate,
               "Cut a text longer than the text tower's context, as clip.tokenize(truncate=True); without it such a "
               "text is refused")
      ->group(group);
  app.add_flag("--no-legrad-correction", o.no_legrad_correction,
               "SigLIP's legrad without LeGrad's empty-prompt correction (which zeroes the patches the prompt \"a "
               "photo of a\" alone lights above 0.8 of its range)")
      ->group(group);  add_class_list_options(app, o.classes_from_words, group);
}

}  // namespace

const CLI::Validator& readable_file() { return kReadableFile; }
const CLI::Validator& model_source() { return kModelSource; }

const CLI::Validator& non_empty() { return kNonEmpty; }

void describe_program(CLI::App& app) {
  app.description(
      "vitattn — draws where a Vision Transformer's class token looks.\n"
      "For each image: resize to SxS, cut into PxP patches, embed them as tokens with a class token\n"
      "and position embeddings, run attention (softmax(Q·Kᵀ/√d_k)), and blend the class token's\n"
      "attention over the patches onto the image, at the image's own resolution.\n"
      "Without --model: one seeded, untrained head. With a ViT checkpoint (timm, DINO, DINOv2,\n"
      "Hugging Face, torchvision): the encoder runs up to --layer and --head picks what is drawn.\n"
      "Writes <out>/<name>_attn.png for every input image (.jpg or .webp with --format), and\n"
      "<out>/<name>_attn.mp4 for every video (mp4, mov, mkv, webm, avi; H.264, or MJPG in .avi; no sound).");
  app.footer(
      "Examples:\n"
      "  vitattn images/cat.jpg                     → vitattn-out/cat_attn.png\n"
      "  vitattn -r photos/ -o maps/                all images below photos/, sub-folders mirrored\n"
      "  vitattn --model dino_vits16.safetensors --head all --threshold 0.6 img.jpg\n"
      "                                             DINO's per-head maps with their 60 % mass outline\n"
      "  vitattn --model vit.safetensors --rollout --discard-ratio 0.9 img.jpg\n"
      "                                             attention rollout over all layers\n"
      "  vitattn --model vit.safetensors --method chefer --class cougar,lion img.jpg\n"
      "                                             where the model sees each class (img_attn_c286.png, …)\n"
      "  vitattn forward --model m.safetensors x.npy   encoder outputs for a preprocessed tensor\n"
      "  vitattn explain                            the worked examples, step by step\n"
      "Exit status: 0 all inputs done; 1 some inputs failed (the others are written); 2 usage or model error;\n"
      "130/143 stopped by SIGINT/SIGTERM (images in hand finished, none started after; see the summary).");
  app.get_formatter()->column_width(34);
  app.set_version_flag("--version", "vitattn " VITATTN_VERSION);
}

void add_input_options(CLI::App& app, ImageOptions& o) {
  app.add_option("inputs", o.inputs, "Image files and/or folders")->type_name("PATH...");
  app.add_option("-o,--output", o.output, "Output folder")->capture_default_str()->type_name("DIR")->check(kNonEmpty);
  app.add_flag("-r,--recursive", o.recursive, "Descend into sub-folders of folder inputs");
  app.add_flag("--skip-existing", o.skip_existing,
               "Leave out inputs whose outputs are all there already (resumes an interrupted batch)");
  app.add_option("-j,--jobs", o.jobs,
                 fmt::format("Images processed in parallel (default: all cores, {} here)", std::thread::hardware_concurrency()))
      ->check(CLI::Range(1, 1024));
}

CLI::Option* add_model_file_option(CLI::App& app, ModelOptions& m) {
  return app.add_option("--model", m.file,
                        "Weights: a ViT checkpoint or the single-head layout (models/README.md), as safetensors or as a "
                        "PyTorch .pth/.pt/.bin (read natively; nothing in it runs), or hf:ORG/NAME[@REVISION] from the "
                        "Hugging Face cache, else the hub")
      ->check(kModelSource)
      ->type_name("FILE|hf:ORG/NAME")
      ->group("Model");
}

CLI::Option* add_img_size_option(CLI::App& app, ModelOptions& m) {
  return app.add_option("--img-size", m.shape.img_size,
                        "Input size S (a multiple of P). Checkpoints: default their own, position embeddings "
                        "are resampled bicubically; seeded model: 224")
      ->check(CLI::Range(1, kMaxImgSize))
      ->group("Model");
}

std::vector<CLI::Option*> add_normalisation_options(CLI::App& app, ModelOptions& m) {
  return {app.add_option("--mean", m.mean, "Normalisation mean r,g,b (default: the model's, else ImageNet)")
              ->type_name("R,G,B")
              ->check(rgb_triplet(false))
              ->group("Model"),
          app.add_option("--std", m.std, "Normalisation std r,g,b (default: the model's, else ImageNet)")
              ->type_name("R,G,B")
              ->check(rgb_triplet(true))
              ->group("Model")};
}

CLI::Option* add_model_options(CLI::App& app, ImageOptions& o) {
  ModelOptions& m = o.model;
  CLI::Option* model = add_model_file_option(app, m);
  CLI::Option* seed = app.add_option("--seed", m.seed, "Seed of the untrained weights used without --model")
                          ->capture_default_str()
                          ->check(kUnsigned);
  add_img_size_option(app, m);
  CLI::Option* seeded_only[] = {
      seed,
      app.add_option("--patch-size", m.shape.patch_size, "Seeded model: patch size P")
          ->capture_default_str()
          ->check(CLI::Range(1, kMaxImgSize)),
      app.add_option("--dim", m.shape.d_model, "Seeded model: token width D")
          ->capture_default_str()
          ->check(CLI::Range(1, kMaxSeededWidth)),
      app.add_option("--d-k", m.shape.d_k, "Seeded model: head width d_k")
          ->capture_default_str()
          ->check(CLI::Range(1, kMaxSeededWidth))};
  for (auto* s : seeded_only) s->group("Model")->excludes(model);
  add_normalisation_options(app, m);
  app.add_option("--save-model", o.save_model, "Write the model in use to FILE (safetensors, F32; the single-head layout only)")
      ->type_name("FILE")
      ->check(kNonEmpty)
      ->group("Model");
  app.add_flag("--no-scale", o.no_scale, "Drop the 1/√d_k scaling, to see why it is there")->group("Model");
  return model;
}

std::vector<CLI::Option*> add_checkpoint_options(CLI::App& app, ModelOptions& m, CLI::Option* model) {
  const std::string group = "Checkpoints";
  // How to read a model file: each needs --model. The views (add_view_options) and
  // --pos-interp work on the seeded model too.
  CLI::Option* file_only[] = {
      app.add_option("--key", m.key,
                     "The dict inside a .pth that holds the weights, e.g. teacher in DINO's full checkpoints "
                     "(default: model, state_dict, teacher or student when present, else the top level)")
          ->type_name("NAME"),
      app.add_option("--family", m.overrides.family,
                     "Checkpoint naming, when recognising it from the tensor names is not enough (deit is timm)"),
      app.add_option("--heads", m.overrides.heads, "Number of heads, when the file does not say (default: D/64)")
          ->check(CLI::Range(1, 1 << 12)),
      app.add_option("--eps", m.overrides.eps, "LayerNorm ε (default: the family's: 1e-6; HF ViT 1e-12)")
          ->check(finite_in(1e-30, 1.0))};
  CLI::Option* gelu = app.add_option("--gelu", m.overrides.gelu, "MLP activation: erf (exact GELU), tanh (its approximation) or quick (CLIP's "
                                       "QuickGELU, x·σ(1.702x)) (default: the family's)");
  choose_from(gelu, std::vector<std::pair<std::string, Gelu>>{{"erf", Gelu::erf}, {"tanh", Gelu::tanh}, {"quick", Gelu::quick}});
  choose_from(file_only[1], named(model::family_names()), {{"deit", "timm"}, {"hf_vit", "hf-vit"}, {"hf_dinov2", "hf-dinov2"}});
  for (CLI::Option* option : file_only) option->group(group)->needs(model);
  gelu->group(group)->needs(model);
  CLI::Option* pos_interp = app.add_option("--pos-interp", m.overrides.pos_interp,
                                           "Position resampling for another --img-size (default: the family's "
                                           "library: timm antialias, DINO offset, torchvision corners, HF plain)")
                                ->group(group);
  choose_from(pos_interp, pos_interps());
  return {file_only[0], file_only[1], file_only[2], file_only[3], gelu, pos_interp};
}

void add_view_options(CLI::App& app, ImageOptions& o) {
  app.add_option("--top", o.top, "Print each image's K most likely classes and write <out>/predictions.csv (needs a classifier)")
      ->type_name("K")
      ->check(CLI::Range(1, 1 << 20))
      ->group("Checkpoints");
  auto* faithfulness = app.add_flag("--faithfulness", o.faithfulness,
                                    "Score each drawn map and a random baseline for the class the map is drawn for "
                                    "(--class's, else the top-1) by deletion and insertion AUC (RISE) into "
                                    "<out>/faithfulness.csv (needs a classifier; docs/faithfulness.md)")
                           ->group("Checkpoints");
  app.add_option("--faithfulness-steps", o.faithfulness_steps,
                 "Faithfulness: steps K of the curves, each a forward per curve (2·(K+1) per map)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096))
      ->type_name("K")
      ->needs(faithfulness)
      ->group("Checkpoints");
  const std::string group = "View (any model)";
  app.add_option("--layer", o.layer, "Layer whose attention is drawn (default: last; negative counts from the end)")
      ->capture_default_str()
      ->check(CLI::Range(-4096, 4095))
      ->group(group);
  app.add_option("--head", o.head,
                 "Head index, or mean|max|min over heads, or all (one overlay per head + a sheet of all)")
      ->default_str(pipeline::head_text(o.head))
      ->check(kHeadChoice)
      ->type_name("h|mean|max|min|all")
      ->group(group);
  app.add_flag("--rollout", o.rollout, "Attention rollout over layers 0…--layer, heads fused by --head (--method rollout)")
      ->group(group);
  choose_from(app.add_option("--query", o.query,
                             "Whose attention row the attention and rollout maps show: cls (the class token) or dist "
                             "(distilled DeiT's distillation token)")
                  ->default_str("cls")
                  ->group(group),
              std::vector<std::pair<std::string, pipeline::QueryToken>>{{"cls", pipeline::QueryToken::cls},
                                                                        {"dist", pipeline::QueryToken::dist}},
              {{"class", "cls"}, {"distillation", "dist"}});
  app.add_option("--discard-ratio", o.discard_ratio,
                 "Rollout and grad-rollout: drop this fraction of the weakest links per layer")
      ->capture_default_str()
      ->check(finite_in(0.0, 0.99))
      ->group(group);
  app.add_flag("--keep-aspect", o.keep_aspect,
               "Keep the image's aspect ratio: shorter side S, longer side to the nearest multiple of P")
      ->group(group);
  add_method_options(app, o);
  add_text_options(app, o);
}

void add_output_options(CLI::App& app, ImageOptions& o) {
  const std::string group = "Output";
  app.add_option("--threshold", o.threshold,
                 "Outline the fewest patches holding this fraction of the map's mass (DINO's mask)")
      ->check(finite_in(0.01, 1.0))
      ->type_name("FRACTION")
      ->group(group);
  app.add_flag("--save-attention", o.save_attention,
               "Also write <name>_attn.npy (attention, float32: [T, T], or [H, T, T] for a checkpoint's layer) "
               "and <name>_cls.npy (the map drawn); with --threshold also <name>_mask.npy (bool)")
      ->group(group);
  auto* report = app.add_flag("--report", o.report,
               "Also write <name>_report.html: one offline page to explore every token's attention, every layer and "
               "head, and with a classifier the most likely classes (--top's K, else 3) with each class-specific "
               "method's map (a batch also writes index.html, a gallery of the pages)")
      ->group(group);
  app.add_option("--report-max-mb", o.report_max_mb,
                 "Report: when every layer's full matrices and the class maps would take more MB than this, keep the "
                 "class token's rows of every layer and the full matrices of --layer only; then drop the maps of the "
                 "least likely classes (never the most likely's)")
      ->capture_default_str()
      ->check(finite_in(0.001, 1e6))
      ->type_name("MB")
      ->needs(report)
      ->group(group);
  choose_from(app.add_option("--report-precision", o.report_precision,
                             "Report: how the page stores each attention weight: u8, 8 bits with a per-row scale "
                             "(error ≤ 1/510 of the row's largest weight), or f16 (fp16), half precision (error ≤ "
                             "2⁻¹¹ of the weight; twice the size)")
                  ->default_str("u8")
                  ->needs(report)
                  ->group(group),
              std::vector<std::pair<std::string, report::ReportPrecision>>{{"u8", report::ReportPrecision::u8},
                                                                       {"f16", report::ReportPrecision::f16}},
              {{"fp16", "f16"}, {"float16", "f16"}, {"half", "f16"}, {"uint8", "u8"}});
  choose_from(app.add_option("--interp", o.render.interp,
                             "Upsampling of the map: nearest shows the patch grid (bilinear and bicubic are linear and "
                             "cubic)")
                  ->default_str("linear")
                  ->group(group),
              std::vector<std::pair<std::string, image::Interp>>{
                  {"nearest", image::Interp::nearest}, {"linear", image::Interp::linear}, {"cubic", image::Interp::cubic}},
              {{"bilinear", "linear"}, {"bicubic", "cubic"}});
  choose_from(app.add_option("--colormap", o.render.colormap, "OpenCV colormap")->default_str("jet")->group(group),
              colormaps());
  app.add_option("--alpha", o.render.alpha, "Weight of the heatmap in the blend")
      ->capture_default_str()
      ->check(finite_in(0.0, 1.0))
      ->group(group);
  choose_from(app.add_option("--format", o.format.format,
                             "Overlay file format: png (lossless), or jpg (jpeg) and webp for small previews")
                  ->default_str("png")
                  ->group(group),
              std::vector<std::pair<std::string, image::ImageFormat>>{
                  {"png", image::ImageFormat::png}, {"jpg", image::ImageFormat::jpg}, {"webp", image::ImageFormat::webp}},
              {{"jpeg", "jpg"}});
  app.add_option("--quality", o.format.quality, "JPEG or WebP quality (default 90)")
      ->check(CLI::Range(1, 100))
      ->group(group);
  app.add_option("--max-pixels", o.max_pixels, "Refuse larger images, before decoding them")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group(group);
  app.add_flag("--strict", o.strict,
               "Fail an image the decoder had to patch up (damaged data), instead of warning and drawing it")
      ->group(group);
}

namespace {
// --artifact-ratio: a finite number above 1 (at 1 or below, half the patches or more would be
// "artifacts": the rule compares a token with the median).
const CLI::Validator kAboveOne(
    [](std::string& s) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v)) return fmt::format("expected a number, got \"{}\"", s);
      if (!std::isfinite(v) || !(v > 1.0 && v <= 1e6)) return fmt::format("{} is not in (1, 1e6]", s);
      return {};
    },
    "in (1, 1e6]", "above one");
}  // namespace

void add_token_options(CLI::App& app, ImageOptions& o) {
  const std::string group = "Tokens (any model)";
  app.add_option("--artifact-ratio", o.artifact_ratio,
                 "Flag a patch token as an artifact at a layer when its norm is above R × the layer's median patch "
                 "norm (the report marks them; --clean leaves them out; heads.csv counts their attention)")
      ->capture_default_str()
      ->type_name("R")
      ->check(kAboveOne)
      ->group(group);
  app.add_flag("--clean", o.clean,
               "Leave the tokens flagged at the drawn layer out of the maps (their weight 0, the rest rescaled to the "
               "map's total); -v and the report say how many")
      ->group(group);
  app.add_flag("--heads-csv", o.heads_csv,
               "Write <out>/heads.csv: per image, layer and head the class token's entropy, mean attention distance, "
               "mass-mask area (--threshold, default 0.6) and flagged tokens' share (also with --save-attention)")
      ->group(group);
  auto* pca = app.add_flag("--pca", o.pca,
                           "Write <name>_pca.png: the first three principal components of the last layer's patch "
                           "features as RGB (docs/tokens.md)")
                  ->group(group);
  app.add_option("--pca-mask", o.pca_mask, "PCA: blank the patches whose first component (scaled to 0…1) is below T")
      ->type_name("T")
      ->check(finite_in(0.0, 1.0))
      ->needs(pca)
      ->group(group);
  app.add_option("--pca-fit", o.pca_fit,
                 "PCA: fit per image, over the whole batch (one colour per part across images; writes "
                 "<out>/pca_fit.npy), or read a fit from FILE (a pca_fit.npy)")
      ->capture_default_str()
      ->type_name("image|batch|FILE")
      ->needs(pca)
      ->group(group);
}

void add_video_options(CLI::App& app, ImageOptions& o) {
  // mp4, mov, mkv, webm and avi inputs (process_video.hpp).
  const std::string group = "Video";
  app.add_flag("--frames-dir", o.frames_dir,
               "Videos: also write each drawn frame's overlay as <out>/<name>_frames/<frame number>_attn.png")
      ->group(group);
  app.add_option("--every", o.every, "Videos: draw every Nth frame (frames 0, N, 2N, …); the output runs at fps/N")
      ->capture_default_str()
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 20))
      ->group(group);
  app.add_option("--max-frames", o.max_frames, "Videos: draw at most M frames")
      ->type_name("M")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->group(group);
  app.add_option("--smooth", o.smooth,
                 "Videos: moving average of the maps across frames against flicker, s = A·map + (1−A)·s_prev "
                 "(A = 1: none; default off)")
      ->type_name("A")
      ->check(kSmoothWeight)
      ->group(group);
}

CLI::Option* add_precision_option(CLI::App& app, Precision& precision) {
  CLI::Option* option =
      app.add_option("--precision", precision,
                     "Precision of the forward's weight products: fp32, or bf16 on a CPU with AVX512-BF16 (refused\n"
                     "elsewhere): the MLP's weights and activations rounded to bfloat16 (nearest even), sums in\n"
                     "float32; faster, maps within about 1% of fp32's. The patch embedding, the attention (qkv, scores,\n"
                     "softmax, proj), norms and every gradient stay float32; the bytes are the same whatever the\n"
                     "thread count")
          ->default_str("fp32")
          ->group("Model");
  choose_from(option, std::vector<std::pair<std::string, Precision>>{{"fp32", Precision::fp32}, {"bf16", Precision::bf16}});
  return option;
}

void add_verbosity_options(CLI::App& app, int& verbosity) {
  app.add_flag_function("-q,--quiet", [&verbosity](std::int64_t n) { verbosity -= static_cast<int>(n); },
                        "Only errors (no progress bar, no summary)");
  app.add_flag_function("-v,--verbose", [&verbosity](std::int64_t n) { verbosity += static_cast<int>(n); },
                        "More detail (debug log)");
}

void add_options(CLI::App& app, ImageOptions& o) {
  describe_program(app);
  add_input_options(app, o);
  add_scale_out_options(app, o.scale_out);
  CLI::Option* model = add_model_options(app, o);
  add_precision_option(app, o.precision);
  add_checkpoint_options(app, o.model, model);
  add_view_options(app, o);
  add_output_options(app, o);
  add_token_options(app, o);
  add_video_options(app, o);
  add_verbosity_options(app, o.verbosity);
}

}  // namespace vitattn::cli
