#include "map_query.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace vitattn::serve {
namespace {

// A request's text as a message shows it: one line, printable ASCII, at most 64 characters.
// Anything else (a newline decoded from %0A, a byte ≥ 0x80) as \xNN; longer text cut with "…".
// The message is logged: a parameter must not forge a second log line.
std::string shown(const std::string& text) {
  constexpr std::size_t kMost = 64;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMost; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += fmt::format("\\x{:02X}", c);
  }
  if (text.size() > kMost) out += "…";
  return out;
}

// A decimal integer in [lo, hi], the whole text: no sign but '-', no spaces, no "1.5".
int integer(const std::string& name, const std::string& text, int lo, int hi) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi)
    throw Error(fmt::format("{}={}: expected an integer in {}…{}", name, shown(text), lo, hi));
  return value;
}

// The CLI's --head syntax (pipeline::parse_head); whether the model has the head, and whether
// the answer can be one map of it, is map_options'.
void set_head(MapQuery& q, const std::string& text) {
  const std::optional<pipeline::HeadSpec> head = pipeline::parse_head(text);
  if (!head) throw Error(fmt::format("head={}: expected {}", shown(text), pipeline::kHeadSyntax));
  q.head = head->choice;
  q.head_index = head->index;
  q.fusion = head->fusion;
}

bool has_control_byte(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b < 0x20 || b == 0x7f;
  });
}

// Indices or labels, as the CLI's --class takes them: kept as text, resolved against the
// model's classes by map_options. Its messages quote it, so no control byte (a log line).
void set_classes(MapQuery& q, const std::string& text) {
  if (text.empty() || text.size() > 4096 || has_control_byte(text))
    throw Error(fmt::format("class={}: expected class indices or labels (1 to 4096 bytes, no control character)",
                            shown(text)));
  q.classes = text;
}

void set_method(MapQuery& q, const std::string& text) {
  const std::optional<pipeline::MapMethod> m = pipeline::method_named(text);
  if (!m)
    throw Error(fmt::format("method={}: expected {}", shown(text),
                            pipeline::method_names(pipeline::every_method(), " or ")));
  q.method = *m;
  q.method_given = true;
}

void set_format(MapQuery& q, const std::string& text) {
  if (text == "npy") q.format = MapFormat::npy;
  else if (text == "png") q.format = MapFormat::png;
  else throw Error(fmt::format("format={}: expected npy or png", shown(text)));
}

// The upload's file name: shown in the page and naming its download, so nothing that could
// break a line or name another folder.
void set_name(MapQuery& q, const std::string& text) {
  const bool bad_byte = has_control_byte(text) || text.find_first_of("/\\") != std::string::npos;
  if (text.empty() || text.size() > 255 || bad_byte)
    throw Error(fmt::format("name={}: expected a file name of 1 to 255 bytes, no control character, / or \\", shown(text)));
  q.name = text;
}

// text=: the prompts, one per line (a CRLF's CR dropped; a final line break ends the last
// line). Empty lines are kept: the CLI's check refuses them, naming the parameter. Tabs pass
// (the tokenisers read them as spaces); any other control byte is refused (a log line).
void set_texts(MapQuery& q, const std::string& text) {
  constexpr std::size_t kMost = 64 * 1024;
  const bool bad_byte = std::any_of(text.begin(), text.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < 0x20 && c != '\n' && c != '\r' && c != '\t') || b == 0x7f;
  });
  if (text.size() > kMost || bad_byte)
    throw Error(fmt::format("text={}: expected prompts, one per line, at most {} bytes, no control character but line "
                            "breaks and tabs", shown(text), kMost));
  q.texts.clear();
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (end < text.size() || !line.empty() || q.texts.empty()) q.texts.push_back(std::move(line));
    start = end + 1;
  }
}

}  // namespace

std::string report_key(const MapQuery& q) {
  std::string texts;  // each prompt's length then its bytes: no line can pass for two
  for (const std::string& t : q.texts) texts += fmt::format("{}:{};", t.size(), t);
  return fmt::format("model={} layer={} head={} head_index={} fusion={} method={} class={} name={} top={} pca={} "
                     "truncate={} texts={}{}",
                     q.model, q.layer, static_cast<int>(q.head), q.head_index, static_cast<int>(q.fusion),
                     q.method_given || q.texts.empty() ? std::string(pipeline::method_name(q.method)) : "the texts' default", q.classes ? "\"" + *q.classes + "\"" : "-", q.name,
                     q.top ? std::to_string(*q.top) : q.texts.empty() ? "3" : "every text", q.pca ? 1 : 0, q.truncate ? 1 : 0, q.texts.size(), texts);
}

MapQuery parse_map_query(const std::multimap<std::string, std::string>& params, QueryKind kind) {
  MapQuery q;
  for (auto it = params.begin(); it != params.end(); ++it) {
    const auto& [name, value] = *it;
    if (params.count(name) > 1 && it != params.lower_bound(name)) throw Error(fmt::format("{}: given more than once", shown(name)));
    if (name == "token") continue;  // the access check's (access.hpp)
    if (name == "model") q.model = static_cast<std::size_t>(integer(name, value, 0, 1023));
    else if (name == "layer") q.layer = integer(name, value, -4096, 4095);
    else if (name == "head") set_head(q, value);
    else if (name == "method") set_method(q, value);
    else if (name == "class") set_classes(q, value);
    else if (name == "format" && kind == QueryKind::map) set_format(q, value);
    else if (name == "name" && kind == QueryKind::report) set_name(q, value);
    else if (name == "top" && kind == QueryKind::report) q.top = integer(name, value, 1, 1 << 20);
    else if (name == "pca" && kind == QueryKind::report) q.pca = integer(name, value, 0, 1) == 1;
    else if (name == "text" && kind == QueryKind::report) set_texts(q, value);
    else if (name == "truncate" && kind == QueryKind::report) q.truncate = integer(name, value, 0, 1) == 1;
    else throw Error(fmt::format("{}: no such parameter (model, layer, head, method, class, {})", shown(name),
                                 kind == QueryKind::map ? "format" : "name, top, pca, text, truncate"));
  }
  return q;
}

}  // namespace vitattn::serve
