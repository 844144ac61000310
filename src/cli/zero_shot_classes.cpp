#include "zero_shot_classes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "core/error.hpp"
#include "environment.hpp"
#include "files/file_io.hpp"
#include "options.hpp"
#include "text/class_prompts.hpp"
#include "text_prompts.hpp"

namespace vitattn::cli {
namespace {

constexpr const char* kImagenet = "imagenet";

// The lists the options name: --labels' classes and the templates that go with them.
struct Lists {
  text::TextLines labels, templates;  // templates empty: each label is its own prompt
  std::vector<std::string> files;
};

Lists read_lists(const ClassListOptions& o) {
  Lists out;
  const bool imagenet = o.labels == kImagenet;
  try {
    out.labels = imagenet ? text::imagenet_class_names() : text::read_labels_file(o.labels);
  } catch (const Error& e) {
    throw Error(std::string("--labels: ") + e.what());
  }
  if (!imagenet) out.files.push_back(o.labels);
  try {
    if (!o.templates.empty()) out.templates = text::read_templates_file(o.templates);
    else if (imagenet) out.templates = text::clip_imagenet_templates();
  } catch (const Error& e) {
    throw Error(std::string("--templates: ") + e.what());
  }
  if (!o.templates.empty()) out.files.push_back(o.templates);
  return out;
}

std::string describe(const Lists& l) {
  const std::string classes = fmt::format("{} class{}", l.labels.entries.size(), l.labels.entries.size() == 1 ? "" : "es");
  if (l.templates.entries.empty()) return fmt::format("{} of {}", classes, l.labels.source);
  return fmt::format("{} of {} × {} template{} of {}", classes, l.labels.source, l.templates.entries.size(),
                     l.templates.entries.size() == 1 ? "" : "s", l.templates.source);
}

}  // namespace

void add_class_list_options(CLI::App& command, ClassListOptions& o, const std::string& group) {
  command
      .add_option("--labels", o.labels,
                  "Zero-shot classes through the model's text tower (CLIP's or SigLIP's), in place of --text: imagenet (OpenAI's 1000\n"
                  "cleaned ImageNet names, each in its 80 prompt templates) or a FILE of class names, one a line\n"
                  "(UTF-8; empty lines skipped; ./imagenet names a file so called). Each class's embedding is the normalised mean of its prompts'\n"
                  "(OpenAI's zeroshot_classifier): writes <out>/text_embedding.npy [classes, E] and text_labels.txt\n"
                  "(one label a line, the rows' order), and with tensors <stem>_logits.npy [N, classes]. Cached\n"
                  "in $XDG_CACHE_HOME/vitattn (else ~/.cache/vitattn), keyed by the text tower's weights and the prompts")
      ->type_name("imagenet|FILE")
      ->check(non_empty())
      ->group(group);
  command
      .add_option("--templates", o.templates,
                  "With --labels: prompt templates, one a line, each with {} where the class name goes (\"a photo\n"
                  "of a {}.\"); without it a FILE's labels are their own prompts, imagenet's use OpenAI's 80")
      ->type_name("FILE")
      ->check(readable_file())
      ->group(group);
  command.add_flag("--no-text-cache", o.no_cache, "With --labels: compute the class embeddings, neither reading nor "
                                                  "writing the text-embedding cache")
      ->group(group);
}

std::optional<ZeroShotClasses> zero_shot_classes(const ClassListOptions& o, const model::OpenedModel& opened,
                                                 const std::string& model_name, int threads) {
  if (o.labels.empty()) {
    if (!o.templates.empty()) throw Error("--templates: needs --labels (the class names the templates are filled with)");
    return std::nullopt;
  }
  if (!opened.text.tower.present())
    throw Error("--labels: " + (opened.text.missing.empty() ? model_name + " has no text tower" : opened.text.missing));
  const Lists lists = read_lists(o);
  ZeroShotClasses out;
  out.labels = lists.labels.entries;
  out.files = lists.files;
  out.description = describe(lists);
  pipeline::ClassEmbeddingRequest& r = out.request;
  r.prompts = text::class_prompts(lists.labels, lists.templates);
  try {
    const TowerTokenizer tokenizer = tower_tokenizer(opened);
    r.ids = text::tokenize_prompts([&tokenizer](const std::string& p) { return tokenizer.ids(p, false); }, lists.labels,
                                   r.prompts);
    r.tokenizer = tokenizer.identity;
  } catch (const Error& e) {
    throw Error(std::string("--labels: ") + e.what());
  }
  if (!o.no_cache) r.cache_folder = vitattn_cache_dir(process_environment);
  r.threads = threads;
  return out;
}

pipeline::ClassEmbeddings encode_zero_shot_classes(const TextTower& tower, const ZeroShotClasses& classes) {
  const auto start = std::chrono::steady_clock::now();
  pipeline::ClassEmbeddings out = pipeline::class_embeddings(tower, classes.request);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.cache_note.empty()) spdlog::warn("text-embedding cache: {}", out.cache_note);
  switch (out.cache) {
    case pipeline::CacheUse::hit:
      spdlog::info("{}: class embeddings from the cache {}", classes.description, files::display(out.cache_file));
      break;
    case pipeline::CacheUse::stored:
      spdlog::info("{}: class embeddings computed in {:.1f} s, cached in {}", classes.description, seconds,
                   files::display(out.cache_file));
      break;
    case pipeline::CacheUse::not_stored:
    case pipeline::CacheUse::off:
      spdlog::info("{}: class embeddings computed in {:.1f} s (not cached)", classes.description, seconds);
      break;
  }
  return out;
}

}  // namespace vitattn::cli
