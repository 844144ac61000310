#include "forward_command.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/vit_head.hpp"
#include "files/file_io.hpp"
#include "hub/hf_cache.hpp"
#include "model_request.hpp"
#include "precision_option.hpp"
#include "pipeline/class_choice.hpp"
#include "pipeline/forward_job.hpp"
#include "pipeline/job_outputs.hpp"
#include "pipeline/output_folders.hpp"
#include "pipeline/threads.hpp"
#include "pipeline/zero_shot_texts.hpp"
#include "text_prompts.hpp"

namespace vitattn::cli {
namespace {

// The request, with --class's classes (resolved against the model: resolve_classes).
pipeline::ForwardRequest forward_request(const ForwardCommandOptions& o, const std::vector<pipeline::ChosenClass>& classes) {
  pipeline::ForwardRequest r;
  r.inputs.assign(o.tensors.begin(), o.tensors.end());
  r.output = o.output;
  if (!hub::is_hf_model(o.model.file)) r.model_file = o.model.file;  // a hub model is in the cache, far from any output
  r.scale = !o.no_scale;
  for (const pipeline::ChosenClass& c : classes) r.classes.push_back(c.index);
  r.methods = chosen_relevance_methods(o.methods);
  r.discard_ratio = static_cast<float>(o.discard_ratio);
  r.lrp_gamma_linear = static_cast<float>(o.lrp_gamma_linear);
  r.lrp_gamma_conv = static_cast<float>(o.lrp_gamma_conv);
  r.legrad_from = o.first_layer.value_or(o.legrad_from);
  r.chefer_from = o.first_layer.value_or(o.texts.empty() ? 0 : -1);  // the paper's rollout; the CLIP notebook's start
  if (!o.texts.empty()) r.class_source = pipeline::ClassSource::texts;
  return r;
}

// Before any input: --class by the image command's rules (pipeline/class_choice.hpp) against
// the model's classifier and class names. One line, exit 2 (run_reporting_errors).
std::vector<pipeline::ChosenClass> resolve_forward_classes(const model::OpenedModel& opened, const ForwardCommandOptions& o) {
  if (o.classes.empty()) return {};
  if (!opened.model.has_classifier())
    throw Error("--class: " + o.model.file + " has no classifier: there is no class logit to take the gradient of" +
                no_classifier_note(opened.model));
  return pipeline::resolve_classes(o.classes, opened.labels, opened.model.n_classes(), o.model.file);
}

// Before any input: --legrad-from a layer the model has. One line, exit 2.
void check_gradient_options(const VitModel& model, const ForwardCommandOptions& o) {
  if (o.classes.empty()) return;
  const int layers = model.n_layers();
  const std::vector<pipeline::MapMethod> methods = chosen_relevance_methods(o.methods);
  const bool legrad = std::find(methods.begin(), methods.end(), pipeline::MapMethod::legrad) != methods.end();
  if (legrad && o.legrad_from >= layers)  // −K past the first layer means every layer (relevance.hpp)
    throw Error(fmt::format("--legrad-from {}: the model has layers 0…{} (negative values count from the end)",
                            o.legrad_from, layers - 1));
}

// Before any input: --text's texts as the tower's id rows (text_prompts.hpp), and an image
// embedding as wide as the text one when there are tensors. One line, exit 2.
std::vector<std::vector<std::int32_t>> tokenized_texts(const model::OpenedModel& opened, const ForwardCommandOptions& o) {
  std::vector<std::vector<std::int32_t>> ids = text_id_rows(opened, o.texts, o.truncate, "--text");
  if (!ids.empty() && !o.tensors.empty()) check_embedding_widths(opened, "--text", o.model.file);
  return ids;
}

// Before any input: --labels's classes as prompts and ids (zero_shot_classes.hpp), checked as
// --text's are against the model; not with --text (both would write text_embedding.npy).
std::optional<ZeroShotClasses> forward_classes(const model::OpenedModel& opened, const ForwardCommandOptions& o,
                                               int threads) {
  const ClassListOptions& lists = o.classes_from_words;
  if (!lists.labels.empty() && !o.texts.empty())
    throw Error("--labels and --text: one or the other (each writes the texts' text_embedding.npy)");
  std::optional<ZeroShotClasses> classes = zero_shot_classes(lists, opened, o.model.file, threads);
  if (classes && !o.tensors.empty()) check_embedding_widths(opened, "--labels", o.model.file);
  return classes;
}

}  // namespace

int run_forward(const ForwardCommandOptions& o, int verbosity) {
  use_precision(o.precision);
  // `forward` needs --model (check_forward); the class names for --class's labels
  const bool text_tower = !o.texts.empty() || !o.classes_from_words.labels.empty();
  model::OpenedModel opened = open_requested_model(o.model, verbosity, !o.classes.empty(), text_tower);
  const std::vector<std::vector<std::int32_t>> ids = tokenized_texts(opened, o);
  if (!ids.empty() && !o.classes.empty()) {  // --class among the texts: their logits are the targets
    check_text_classes(o.classes);
    opened.model.zero_shot = pipeline::zero_shot_head(opened.text.tower, ids, legrad_empty_prompt_ids(opened, true));
    opened.labels = model::ClassLabels{o.texts, "--text"};
  }
  const std::vector<pipeline::ChosenClass> classes = resolve_forward_classes(opened, o);
  check_gradient_options(opened.model, o);
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pipeline::ForwardRequest request = forward_request(o, classes);
  request.texts = ids;
  const std::optional<ZeroShotClasses> zero_shot = forward_classes(opened, o, threads);
  if (zero_shot) {
    request.class_labels = zero_shot->labels;
    request.class_files.assign(zero_shot->files.begin(), zero_shot->files.end());
  }
  pipeline::check_forward_outputs(request);
  if (!classes.empty()) spdlog::info("--class: the gradients of {}", pipeline::class_names(classes));
  pipeline::prepare_output_folder(request.output);
  pipeline::set_library_threads(threads);
  std::optional<pipeline::EncodedTexts> texts;
  if (zero_shot) {
    const pipeline::ClassEmbeddings encoded = encode_zero_shot_classes(opened.text.tower, *zero_shot);
    texts = pipeline::write_class_texts(encoded.embeddings, opened.text.tower, request);
    spdlog::info("{} class{} → {}, {}", request.class_labels.size(), request.class_labels.size() == 1 ? "" : "es",
                 files::display(texts->written.embedding), files::display(texts->written.labels));
  }
  if (!request.texts.empty()) {
    texts = pipeline::forward_texts(opened.text.tower, request);
    spdlog::info("{} text{} → {}", request.texts.size(), request.texts.size() == 1 ? "" : "s",
                 files::display(texts->written.embedding));
  }
  int failed = 0;
  for (const pipeline::ForwardInputResult& r : pipeline::forward_files(opened.model, request, texts ? &*texts : nullptr)) {
    if (!r.error.empty()) {
      spdlog::error("{}", r.error);
      ++failed;
      continue;
    }
    spdlog::info("{}: {} input{} → {}", files::display(r.input), r.images, r.images == 1 ? "" : "s",
                 files::display(request.output / (r.input.stem().string() + pipeline::array_suffix("*"))));
  }
  return failed ? 1 : 0;
}

}  // namespace vitattn::cli
