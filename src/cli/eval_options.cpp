#include "eval_options.hpp"

#include <algorithm>

namespace vitattn::cli {
namespace {

// --method's choices: every method's name and alias (pipeline/map_methods.hpp), and all.
std::vector<std::string> method_list() {
  std::vector<std::string> out;
  for (const pipeline::MapMethodRow& r : pipeline::map_method_rows()) out.emplace_back(r.name);
  for (const auto& [alias, name] : pipeline::method_aliases()) out.push_back(alias);
  out.emplace_back("all");
  return out;
}

// An alias's method name; a name as it is.
std::string canonical(const std::string& name) {
  for (const auto& [alias, method] : pipeline::method_aliases())
    if (alias == name) return method;
  return name;
}

void add_view_group(CLI::App& eval, EvalCommandOptions& o) {
  const std::string group = "View";
  eval.add_option("--layer", o.layer, "Layer whose maps are measured (default: last; negative counts from the end)")
      ->check(CLI::Range(-4096, 4095))
      ->group(group);
  eval.add_option("--discard-ratio", o.discard_ratio, "rollout and grad-rollout: drop this fraction of the weakest links")
      ->capture_default_str()
      ->check(finite_in(0.0, 0.99))
      ->group(group);
  eval.add_option("--legrad-from", o.legrad_from, "legrad: the first layer summed (negative counts from the end)")
      ->capture_default_str()
      ->check(CLI::Range(-4096, 4095))
      ->group(group);
  add_lrp_gamma_options(eval, o.lrp_gamma_linear, o.lrp_gamma_conv, group);
  eval.add_flag("--keep-aspect", o.keep_aspect, "Keep each image's aspect ratio (shorter side = the input size)")->group(group);
  eval.add_flag("--no-scale", o.no_scale, "Drop the 1/√d_k scaling")->group(group);
}

}  // namespace

CLI::App* add_eval_command(CLI::App& app, EvalCommandOptions& o, int& verbosity) {
  CLI::App* eval = app.add_subcommand(
      "eval",
      "Measure the map methods with the field's yardsticks over a set of images, each beside a random baseline:\n"
      "segmentation against object masks (pixel accuracy, mIoU, mAP, pointing game), positive and negative\n"
      "perturbation (AUC of the top-1 hits as the pixels the map ranks highest, or lowest, are removed) and the\n"
      "cascading model-randomisation sanity check (Spearman's correlation with the map of a model whose blocks\n"
      "are re-drawn from the top). Writes <out>/eval.csv (method,metric,value,images), eval_images.csv (the\n"
      "same per image) and eval_curves.csv (the mean curves); docs/evaluation.md defines every figure.\n"
      "Each image's measurements are kept as <name>_eval.csv, which --skip-existing reads back and the CSVs\n"
      "are gathered from: a shard (--shard) writes only those, the same command without --shard then the CSVs.");
  eval->footer(
      "Examples:\n"
      "  vitattn eval --model vit.safetensors images/ -o ev          perturbation and sanity, every method\n"
      "  vitattn eval --model vit.safetensors --masks masks/ --labels-csv labels.csv --method chefer,rollout images/\n"
      "  vitattn eval --model vit.safetensors images/ -o ev --shard 1/2 --skip-existing   (and 2/2), then:\n"
      "  vitattn eval --model vit.safetensors images/ -o ev --skip-existing               the CSVs of both\n"
      "Exit status: 0 every image measured; 1 some failed (the CSVs hold the others); 2 usage or model error\n"
      "(a label outside the classes, a class-specific method on a model without a classifier, no classifier\n"
      "and no --masks); 130/143 stopped by SIGINT/SIGTERM (images in hand finished, the CSVs of those done).");
  eval->add_option("inputs", o.inputs, "Images, and folders of them")->type_name("IMAGE|DIR...");
  eval->add_option("-o,--output", o.output, "Output folder")->capture_default_str()->type_name("DIR")->check(non_empty());
  eval->add_flag("-r,--recursive", o.recursive, "Descend into sub-folders of a folder input");
  eval->add_flag("--skip-existing", o.skip_existing,
                 "Read back the images whose <name>_eval.csv was made with these settings instead of measuring them "
                 "again (resumes an interrupted run)");
  eval->add_option("-j,--jobs", o.jobs, "Images measured at once (default: one per core); the CSVs' bytes are the same "
                                        "whatever the count")
      ->check(CLI::Range(1, 1024));
  eval->add_option("--masks", o.masks,
                   "Folder of object masks, <stem>.png for each image, the image's size, nonzero = object: the "
                   "segmentation metrics (an image without one is left out of them, with a warning)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  eval->add_option("--labels-csv", o.labels_csv,
                   "Rows file,class (the image's path as given or its file name; a class index or label): the target of "
                   "the perturbation test and of the class-specific maps (default: each image's unperturbed top-1)")
      ->type_name("FILE")
      ->check(readable_file());
  eval->add_option("--method", o.methods, "Comma list of map methods to measure, or all (default: every one the model allows)")
      ->delimiter(',')
      ->transform(CLI::IsMember(method_list(), CLI::ignore_case))
      ->type_name("LIST");
  eval->add_flag("--save-attention", o.save_attention, "Also write each map's values, <name>_cls_<method>.npy [grid_h, grid_w]");
  eval->add_flag("--no-sanity", o.no_sanity, "Leave out the randomisation test (a map per layer and method less per image)");
  CLI::Option* model = add_model_file_option(*eval, o.model);
  add_img_size_option(*eval, o.model);
  add_normalisation_options(*eval, o.model);
  add_checkpoint_options(*eval, o.model, model);
  add_view_group(*eval, o);
  add_scale_out_options(*eval, o.scale_out);
  add_verbosity_options(*eval, verbosity);
  eval->callback([eval, &o] { check_scale_out(*eval, o.scale_out); });
  return eval;
}

void check_eval(const CLI::App& eval) {
  if (eval.count("--model") == 0) throw CLI::ValidationError("eval requires --model");
  if (eval.count("inputs") == 0 && eval.count("--files-from") == 0) throw CLI::ValidationError("eval requires input images");
}

std::vector<pipeline::MapMethod> eval_methods(const std::vector<std::string>& names, bool has_classifier) {
  const bool all = names.empty() || std::find(names.begin(), names.end(), "all") != names.end();
  std::vector<pipeline::MapMethod> methods;
  for (pipeline::MapMethod m : pipeline::every_method()) {
    const bool named = std::any_of(names.begin(), names.end(),
                                   [&](const std::string& n) { return canonical(n) == pipeline::method_name(m); });
    if (named || (all && (has_classifier || !pipeline::needs_classifier(m)))) methods.push_back(m);
  }
  return methods;
}

}  // namespace vitattn::cli
