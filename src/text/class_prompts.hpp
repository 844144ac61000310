#pragma once
// Zero-shot classes from words: the class names and the prompt templates a text tower encodes
// into one embedding per class (OpenAI's notebooks/Prompt_Engineering_for_ImageNet.ipynb:
// imagenet_classes, imagenet_templates, zeroshot_classifier's `template.format(classname)`).
// Parsing and formatting only; the encoding and the average are the core's
// (core/prompt_ensemble.hpp), the cache the pipeline's (pipeline/class_embeddings.hpp).
//
// Built in (data/clip/, embedded at build time as the merges are; data/clip/README.md has the
// credit and each file's sha256): the notebook's 1000 cleaned ImageNet class names, in class
// order (its list as it is: "missile" and "sunglasses" each name two classes there), and its
// 80 templates.
//
// A user's files, UTF-8, one entry a line: an empty line (a trailing newline's too, and "\r"
// of CRLF endings and a leading byte-order mark are dropped) is skipped; anything else is an
// entry, as written (no trimming: the tokeniser folds white space anyway). Errors are one
// line naming the file and the line: invalid UTF-8; a label of white space only (an empty
// label, probably a mistake); a template without "{}"; a file with no entry.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vitattn::text {

// Entries of a file (or the built-in lists) with where each came from, for messages.
struct TextLines {
  std::string source;               // "FILE" or "the built-in ImageNet class names"
  std::vector<std::string> entries;
  std::vector<int> lines;           // entries[i]'s line in the source, from 1
  std::string where(std::size_t i) const;  // "SOURCE line N"
};

TextLines imagenet_class_names();     // the notebook's 1000 cleaned names (imagenet_classes)
TextLines clip_imagenet_templates();  // the notebook's 80 templates (imagenet_templates)

// Labels / templates from a file's text (`source` names it in errors), or from the file.
TextLines parse_labels(std::string_view text, const std::string& source);
TextLines parse_templates(std::string_view text, const std::string& source);
TextLines read_labels_file(const std::filesystem::path& path);
TextLines read_templates_file(const std::filesystem::path& path);

// Python's template.format(name) for the templates above: each "{}" replaced by `name`
// (verbatim: a name's own braces stay as they are). "{{" and "}}" are not unescaped.
std::string format_prompt(std::string_view template_text, std::string_view name);

// The prompts of each class, in class order: every template formatted with its name, in
// template order; no templates: the name alone is its one prompt.
std::vector<std::vector<std::string>> class_prompts(const TextLines& labels, const TextLines& templates);

// Each prompt through `tokenize` (the model's own tokeniser: one text's context-long id row,
// no truncation). Its Error for a prompt (one over the context) is rethrown naming the label's
// source line.
using PromptTokenizer = std::function<std::vector<std::int32_t>(const std::string& prompt)>;
std::vector<std::vector<std::vector<std::int32_t>>> tokenize_prompts(const PromptTokenizer& tokenize,
                                                                     const TextLines& labels,
                                                                     const std::vector<std::vector<std::string>>& prompts);

// The built-in tokeniser's identity, for caches keyed by what made the ids: the XXH64 of the
// embedded merges file, "clip-bpe:<16 hex digits>".
std::string clip_tokenizer_identity();

}  // namespace vitattn::text
