#pragma once
// Zero-shot classes from words on the command line: --labels imagenet|FILE, --templates FILE,
// --no-text-cache, for any command with a text tower, CLIP's or SigLIP's (forward's text embeddings, the image
// command's zero-shot classifier). The lists are text/class_prompts.hpp's, the ensemble and its cache
// pipeline/class_embeddings.hpp's; this file names the flags and finds the cache folder
// (environment.hpp).
//
// --labels imagenet: OpenAI's 1000 cleaned ImageNet names, with its 80 templates unless
// --templates gives others. --labels FILE: one class a line; with --templates FILE each label
// in every template, else each label is its own prompt.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/text_tower.hpp"
#include "model/open_model.hpp"
#include "pipeline/class_embeddings.hpp"

namespace vitattn::cli {

struct ClassListOptions {
  std::string labels;     // --labels: "imagenet" or a file; empty: no classes
  std::string templates;  // --templates: a file; empty: the default above
  bool no_cache = false;  // --no-text-cache
};

// Declares --labels, --templates and --no-text-cache on `command`, in its help `group`.
void add_class_list_options(CLI::App& command, ClassListOptions& options, const std::string& group);

// The zero-shot classes ready to encode: their labels and the request for the ensemble.
struct ZeroShotClasses {
  std::vector<std::string> labels;
  std::vector<std::string> files;  // the files the lists came from (the output guard's reads)
  pipeline::ClassEmbeddingRequest request;
  std::string description;  // "1000 classes × 80 templates (the built-in ImageNet …)" for the log
};

// Before any input: --templates without --labels, --labels on a model without a text tower
// (the loader's reason why it has none), a bad list, a SigLIP without its spiece.model, or a
// prompt over the context: one Error line naming the flag and the file's line. Nothing when
// --labels is not given. The prompts are tokenised with the tower's own tokeniser
// (text_prompts.hpp): CLIP's byte pairs, or SigLIP's SentencePiece model, whose identity then
// keys the cache.
std::optional<ZeroShotClasses> zero_shot_classes(const ClassListOptions& options, const model::OpenedModel& opened,
                                                 const std::string& model_name, int threads);

// The classes' embeddings (from the cache when it holds them), logged: where they came from.
pipeline::ClassEmbeddings encode_zero_shot_classes(const TextTower& tower, const ZeroShotClasses& classes);

}  // namespace vitattn::cli
