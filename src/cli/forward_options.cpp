#include "forward_options.hpp"

namespace vitattn::cli {

CLI::App* add_forward_command(CLI::App& app, ForwardCommandOptions& o, int& verbosity) {
  CLI::App* forward = app.add_subcommand(
      "forward",
      "Run a checkpoint's encoder on preprocessed tensors (.npy, float32/64, [3, H, W] or [N, 3, H, W]) and write\n"
      "<out>/<stem>_attention.npy [N, L, H, T, T], <stem>_features.npy [N, D] (class token after the final\n"
      "norm) and <stem>_logits.npy [N, C] when the model has a classifier. Takes --model, -o and the\n"
      "Checkpoints options; for checking against other implementations.");
  forward->footer(
      "Examples:\n"
      "  vitattn forward --model m.safetensors x.npy        vitattn-out/x_attention.npy, x_features.npy, …\n"
      "  vitattn forward --model dino.pth --key teacher --heads 6 a.npy b.npy -o out\n"
      "Exit status: 0 all tensors done; 1 some failed (the others are written); 2 usage or model error.");
  forward->add_option("tensors", o.tensors, "Input tensors (.npy)")
      ->required()
      ->type_name("FILE.npy...")
      ->check(readable_file());
  forward->add_option("-o,--output", o.output, "Output folder")->capture_default_str()->type_name("DIR")->check(non_empty());
  CLI::Option* model = add_model_file_option(*forward, o.model);
  forward->add_flag("--no-scale", o.no_scale, "Drop the 1/√d_k scaling, to see why it is there")->group("Model");
  add_checkpoint_options(*forward, o.model, model);
  add_verbosity_options(*forward, verbosity);
  return forward;
}

void check_forward(const CLI::App& forward) {
  if (forward.count("--model") == 0) throw CLI::ValidationError("forward requires --model");
}

}  // namespace vitattn::cli
