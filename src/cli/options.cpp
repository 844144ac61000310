#include "options.hpp"

#include <thread>

#include "io/overlay.hpp"

namespace vitattn::cli {

void check_combinations(const CLI::App& app, const Options& o) {
  if (o.model.empty()) return;
  for (const char* seeded_only : {"--seed", "--img-size", "--patch-size", "--dim", "--d-k"})
    if (app.count(seeded_only) > 0)
      throw CLI::ValidationError(std::string(seeded_only) + " describes the seeded model and cannot be used with --model");
}

void add_options(CLI::App& app, Options& o) {
  app.description(
      "vitattn — draws where a Vision Transformer's class token looks.\n"
      "For each image: resize to SxS, cut into PxP patches, embed them as tokens with a class token\n"
      "and position embeddings, run one attention head (softmax(Q·Kᵀ/√d_k)), and blend the class\n"
      "token's attention over the patches onto the image, at the image's own resolution.\n"
      "Writes <out>/<name>_attn.png for every input image. Seeded weights are untrained.");
  app.footer(
      "Examples:\n"
      "  vitattn images/cat.jpg                     → vitattn-out/cat_attn.png\n"
      "  vitattn -r photos/ -o maps/                all images below photos/, sub-folders mirrored\n"
      "  vitattn --model head.safetensors img.png   weights from a file (see models/README.md)\n"
      "  vitattn explain                            the worked examples, step by step\n"
      "Exit status: 0 all inputs done; 1 some inputs failed (the others are written); 2 usage or model error;\n"
      "130/143 stopped by SIGINT/SIGTERM (images in hand finished, none started after; see the summary).");
  app.get_formatter()->column_width(34);

  app.add_option("inputs", o.inputs, "Image files and/or folders")->type_name("PATH...");
  app.add_option("-o,--output", o.output, "Output folder")->capture_default_str()->type_name("DIR");
  app.add_flag("-r,--recursive", o.recursive, "Descend into sub-folders of folder inputs");
  app.add_flag("--skip-existing", o.skip_existing,
               "Leave out inputs whose outputs are all there already (resumes an interrupted batch)");
  app.add_option("-j,--jobs", o.jobs, "Images processed in parallel (default: all cores, " +
                                          std::to_string(std::thread::hardware_concurrency()) + " here)")
      ->check(CLI::Range(1, 1024));

  app.add_option("--model", o.model, "Model weights (safetensors, native single-head layout, see models/README.md)")
      ->check(CLI::Validator(CLI::ExistingFile).description(""))
      ->type_name("FILE")
      ->group("Model");
  app.add_option("--seed", o.seed, "Seed of the untrained weights used without --model")
      ->capture_default_str()
      ->group("Model");
  const auto positive = CLI::Validator(CLI::Range(1, 1 << 16)).description("");
  CLI::Option* shape[] = {
      app.add_option("--img-size", o.shape.img_size, "Seeded model: input size S")->capture_default_str()->check(positive),
      app.add_option("--patch-size", o.shape.patch_size, "Seeded model: patch size P")->capture_default_str()->check(positive),
      app.add_option("--dim", o.shape.d_model, "Seeded model: token width D")->capture_default_str()->check(positive),
      app.add_option("--d-k", o.shape.d_k, "Seeded model: head width d_k")->capture_default_str()->check(positive)};
  for (auto* s : shape) s->group("Model");
  app.add_option("--mean", o.mean, "Normalisation mean r,g,b (default: the model's, else ImageNet)")
      ->type_name("R,G,B")
      ->group("Model");
  app.add_option("--std", o.std, "Normalisation std r,g,b (default: the model's, else ImageNet)")
      ->type_name("R,G,B")
      ->group("Model");
  app.add_option("--save-model", o.save_model, "Write the model in use to FILE (safetensors, F32)")
      ->type_name("FILE")
      ->group("Model");
  app.add_flag("--no-scale", o.no_scale, "Drop the 1/√d_k scaling, to see why it is there")->group("Model");

  app.add_flag("--save-attention", o.save_attention,
               "Also write <name>_attn.npy (full attention matrix, float32) and <name>_cls.npy (class-token map)")
      ->group("Output");
  app.add_option("--interp", o.interp, "Upsampling of the map: nearest shows the patch grid")
      ->capture_default_str()
      ->check(CLI::IsMember({"nearest", "linear", "cubic"}, CLI::ignore_case))
      ->group("Output");
  app.add_option("--colormap", o.colormap, "OpenCV colormap")
      ->capture_default_str()
      ->check(CLI::IsMember(io::colormap_names(), CLI::ignore_case))
      ->group("Output");
  app.add_option("--alpha", o.alpha, "Weight of the heatmap in the blend")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group("Output");
  app.add_option("--max-pixels", o.max_pixels, "Refuse larger images, before decoding them")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Output");

  app.add_flag_function("-q,--quiet", [&o](std::int64_t n) { o.verbosity -= static_cast<int>(n); },
                        "Only errors (no progress bar, no summary)");
  app.add_flag_function("-v,--verbose", [&o](std::int64_t n) { o.verbosity += static_cast<int>(n); },
                        "More detail (debug log)");

  auto* explain = app.add_subcommand("explain", "Walk through the worked examples of attention, step by step");
  explain->add_option("--heatmap", o.explain_heatmap, "Also write example (b)'s weight matrix as a PNG heatmap")
      ->type_name("FILE.png");
  explain->callback([&o] { o.explain = true; });
}

}  // namespace vitattn::cli
