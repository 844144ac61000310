// The fuzz entry point of `vitattn serve`'s own request parsing (targets.hpp): the map query
// (serve/map_query.hpp) and the access rules (serve/access.hpp). The HTTP framing is
// cpp-httplib's, fuzzed upstream; what reaches these functions is what it decoded.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "core/error.hpp"
#include "serve/access.hpp"
#include "serve/map_query.hpp"
#include "targets.hpp"

namespace vitattn::fuzz {
namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz self-check failed: %s\n", what);
  std::abort();
}

// "a=b&c=d" → {a: b, c: d} (no '=': an empty value), as httplib hands the decoded query over.
std::multimap<std::string, std::string> query_params(const std::string& query) {
  std::multimap<std::string, std::string> params;
  std::size_t start = 0;
  while (start <= query.size()) {
    const std::size_t end = std::min(query.find('&', start), query.size());
    const std::string pair = query.substr(start, end - start);
    const std::size_t eq = pair.find('=');
    if (!pair.empty())  // "a=1&&b=2", "": httplib hands no parameter for an empty piece
      params.emplace(pair.substr(0, eq), eq == std::string::npos ? "" : pair.substr(eq + 1));
    start = end + 1;
  }
  return params;
}

// The typed query written back as parameters: parsing them again must give the same query.
std::multimap<std::string, std::string> as_params(const serve::MapQuery& q) {
  std::multimap<std::string, std::string> p{{"model", std::to_string(q.model)}, {"layer", std::to_string(q.layer)},
                                            {"method", pipeline::method_name(q.method)},
                                            {"format", q.format == serve::MapFormat::png ? "png" : "npy"}};
  p.emplace("head", pipeline::head_text({q.head, q.head_index, q.fusion}));
  if (q.classes) p.emplace("class", *q.classes);
  return p;
}

bool same(const serve::MapQuery& a, const serve::MapQuery& b) {
  return a.model == b.model && a.layer == b.layer && a.head == b.head && a.fusion == b.fusion &&
         (a.head != pipeline::HeadChoice::index || a.head_index == b.head_index) && a.method == b.method &&
         a.classes == b.classes && a.format == b.format;
}

// Lines up to the first empty one: "METHOD" then "Name: value" headers; the rest: the query.
serve::RequestHead request_head(const std::string& text, std::string& query) {
  serve::RequestHead head;
  std::size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) break;
    if (first) {
      head.method = line;
      first = false;
      continue;
    }
    const std::size_t colon = line.find(": ");
    const std::string name = line.substr(0, colon), value = colon == std::string::npos ? "" : line.substr(colon + 2);
    if (name == "Host") head.host = value;
    else if (name == "Origin") head.origin = value;
    else if (name == "Authorization") head.authorization = value;
    else if (name == "Content-Length") head.content_length = value;
    else if (name == "Transfer-Encoding") head.transfer_encoding = value;
  }
  query = start < text.size() ? text.substr(start) : "";
  return head;
}

// The same parameters as a report's query (name instead of format): a name taken holds no
// control byte and no path separator, and the cache key built from it stays one line.
Outcome report_outcome(const std::multimap<std::string, std::string>& params) {
  try {
    const serve::MapQuery q = serve::parse_map_query(params, serve::QueryKind::report);
    check(!q.name.empty() && q.name.size() <= 255, "a report name out of its length");
    for (const char c : q.name)
      check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f && c != '/' && c != '\\', "a report name with a control byte or a separator");
    check(serve::report_key(q).find('\n') == std::string::npos, "a report key spans several lines");
    return Outcome::accepted;
  } catch (const Error& e) {
    check(std::string(e.what()).find('\n') == std::string::npos, "an error message spans several lines");
    return Outcome::refused;
  }
}

}  // namespace

Outcome serve_request_input(const std::uint8_t* data, std::size_t size) {
  std::string query;
  serve::RequestHead head = request_head(std::string(reinterpret_cast<const char*>(data), size), query);
  const auto params = query_params(query);
  if (params.count("token")) head.token_param = params.find("token")->second;
  const serve::AccessRule rule{serve::host_values("127.0.0.1", 8642), "s3cret", 1u << 20};
  if (const auto refusal = serve::access_refusal(rule, head)) {
    const int s = refusal->status;
    check(s == 400 || s == 401 || s == 403 || s == 411 || s == 413, "a refusal with a status outside 400/401/403/411/413");
    check(refusal->message.find('\n') == std::string::npos, "a refusal message spans several lines");
    check(refusal->message.find("s3cret") == std::string::npos, "a refusal message names the token");
  } else {
    check(head.host && (*head.host == "127.0.0.1:8642" || *head.host == "localhost:8642"), "a foreign Host let through");
    check(head.authorization == "Bearer s3cret" || head.token_param == "s3cret", "let through without the token");
  }
  try {
    const serve::MapQuery q = serve::parse_map_query(params);
    check(q.model < 1024 && q.layer >= -4096 && q.layer <= 4095, "a model or layer out of the parser's range");
    check(same(serve::parse_map_query(as_params(q)), q), "the query written back parses to another query");
    report_outcome(params);
    return Outcome::accepted;
  } catch (const Error& e) {
    check(std::string(e.what()).find('\n') == std::string::npos, "an error message spans several lines");
    return report_outcome(params);
  }
}

}  // namespace vitattn::fuzz
