#pragma once
// `vitattn forward --model FILE [OPTIONS] tensors…`: its options and its help. What it does is
// forward_command.hpp's.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "pipeline/map_methods.hpp"
#include "zero_shot_classes.hpp"

namespace vitattn::cli {

struct ForwardCommandOptions {
  ModelOptions model;                // --model (required) and the Checkpoints options
  std::vector<std::string> tensors;  // .npy inputs
  std::vector<std::string> texts;    // --text: texts through a CLIP or SigLIP model's text tower
  bool truncate = false;             // --truncate: a text over the context is cut, not refused
  ClassListOptions classes_from_words;  // --labels, --templates, --no-text-cache: zero-shot classes
  std::string output = "vitattn-out";
  bool no_scale = false;
  int threads = 0;                   // --threads: the products' threads; 0: every core
  Precision precision = Precision::fp32;  // --precision: the weight products' (core/gemm_bf16.hpp)
  // Gradients of the logit y_c: --class c (indices or labels, as the image command's: resolved
  // against the model by pipeline/class_choice.hpp), the maps of --method ("all": every one),
  // their settings.
  std::vector<std::string> classes;
  std::vector<std::string> methods;
  double discard_ratio = 0.0;        // grad-rollout's
  int legrad_from = -2;              // LeGrad's first layer; negative counts from the end
  std::optional<int> first_layer;    // --first-layer: Chefer's and LeGrad's
  double lrp_gamma_linear = vitattn::lrp_default_gamma_linear;  // --lrp-gamma-linear
  double lrp_gamma_conv = vitattn::lrp_default_gamma_conv;      // --lrp-gamma-conv
};

// Declares the `forward` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_forward_command(CLI::App& app, ForwardCommandOptions& options, int& verbosity);

// After parsing: `forward` needs --model, and tensors, --text or --labels (a
// CLI::ValidationError "forward requires --model").
void check_forward(const CLI::App& forward);

// --method's names → the class-specific methods, each once, in order; "all": every one (the
// map methods' table's order).
std::vector<pipeline::MapMethod> chosen_relevance_methods(const std::vector<std::string>& names);

}  // namespace vitattn::cli
