#include "text/class_prompts.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "files/content_hash.hpp"
#include "files/file_io.hpp"
#include "text/unicode_text.hpp"

// The embedded files (clip_zeroshot_data.cpp) and the merges (clip_merges_data.cpp).
extern "C" const char vitattn_clip_imagenet_classes[];
extern "C" const char vitattn_clip_imagenet_classes_end[];
extern "C" const char vitattn_clip_imagenet_templates[];
extern "C" const char vitattn_clip_imagenet_templates_end[];
extern "C" const unsigned char vitattn_clip_merges_gz[];
extern "C" const unsigned char vitattn_clip_merges_gz_end[];

namespace vitattn::text {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr std::uint64_t kMaxListBytes = 64ull << 20;  // a labels or templates file: far more than any list of names

enum class Kind { labels, templates };

// One rule for both kinds of file: the lines, empty ones skipped, each entry checked.
TextLines parse_lines(std::string_view text, const std::string& source, Kind kind) {
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
  TextLines out;
  out.source = source;
  int line = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view entry = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line;
    if (entry.ends_with('\r')) entry.remove_suffix(1);
    if (entry.empty()) continue;
    const std::string where = fmt::format("{} line {}", source, line);
    std::u32string characters;
    try {
      characters = decode_utf8(entry, "the line");
    } catch (const Error& e) {
      throw Error(where + ": not valid UTF-8 (" + e.what() + ")");
    }
    bool blank = true;
    for (char32_t c : characters) blank = blank && is_python_space(c);
    if (kind == Kind::labels && blank) throw Error(where + ": an empty label (white space only)");
    if (kind == Kind::templates && entry.find("{}") == std::string_view::npos)
      throw Error(where + ": a template without {} (where the class name goes)");
    out.entries.emplace_back(entry);
    out.lines.push_back(line);
  }
  if (out.entries.empty())
    throw Error(source + (kind == Kind::labels ? ": no label (one class name a line)" : ": no template (one a line)"));
  return out;
}

std::string_view embedded(const char* begin, const char* end) {
  return {begin, static_cast<std::size_t>(end - begin)};
}

std::string file_text(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = files::read_file(path, kMaxListBytes);
  return {bytes.begin(), bytes.end()};
}

}  // namespace

std::string TextLines::where(std::size_t i) const { return fmt::format("{} line {}", source, lines.at(i)); }

TextLines imagenet_class_names() {
  return parse_labels(embedded(vitattn_clip_imagenet_classes, vitattn_clip_imagenet_classes_end),
                      "the built-in ImageNet names");
}

TextLines clip_imagenet_templates() {
  return parse_templates(embedded(vitattn_clip_imagenet_templates, vitattn_clip_imagenet_templates_end),
                         "the built-in templates");
}

TextLines parse_labels(std::string_view text, const std::string& source) { return parse_lines(text, source, Kind::labels); }

TextLines parse_templates(std::string_view text, const std::string& source) {
  return parse_lines(text, source, Kind::templates);
}

TextLines read_labels_file(const std::filesystem::path& path) { return parse_labels(file_text(path), files::display(path)); }

TextLines read_templates_file(const std::filesystem::path& path) {
  return parse_templates(file_text(path), files::display(path));
}

std::string format_prompt(std::string_view template_text, std::string_view name) {
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t hole = template_text.find("{}", at);
    out.append(template_text.substr(at, hole - at));
    if (hole == std::string_view::npos) return out;
    out.append(name);
    at = hole + 2;
  }
}

std::vector<std::vector<std::string>> class_prompts(const TextLines& labels, const TextLines& templates) {
  std::vector<std::vector<std::string>> out(labels.entries.size());
  for (std::size_t c = 0; c < labels.entries.size(); ++c) {
    if (templates.entries.empty()) out[c].push_back(labels.entries[c]);
    for (const std::string& t : templates.entries) out[c].push_back(format_prompt(t, labels.entries[c]));
  }
  return out;
}

std::vector<std::vector<std::vector<std::int32_t>>> tokenize_prompts(const PromptTokenizer& tokenize,
                                                                     const TextLines& labels,
                                                                     const std::vector<std::vector<std::string>>& prompts) {
  std::vector<std::vector<std::vector<std::int32_t>>> out(prompts.size());
  for (std::size_t c = 0; c < prompts.size(); ++c) {
    try {
      for (const std::string& p : prompts[c]) out[c].push_back(tokenize(p));
    } catch (const Error& e) {
      throw Error(labels.where(c) + ": " + e.what());
    }
  }
  return out;
}

std::string clip_tokenizer_identity() {
  files::Digest64 d;
  d.add(vitattn_clip_merges_gz, static_cast<std::size_t>(vitattn_clip_merges_gz_end - vitattn_clip_merges_gz));
  return "clip-bpe:" + d.hex();
}

}  // namespace vitattn::text
