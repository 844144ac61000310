#include "report/html_page.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace vitattn::io {

std::string render_page(const PageTemplate& page, const std::map<std::string, std::string>& fields) {
  const std::string csp = fmt::format(
      "default-src 'none'; img-src data:; style-src 'sha256-{}'; script-src 'sha256-{}'; base-uri 'none'; "
      "form-action 'none'",
      page.css_sha256, page.js_sha256);
  std::string out;
  out.reserve(page.html.size() + page.css.size() + page.js.size());
  std::size_t at = 0;
  while (true) {
    const std::size_t open = page.html.find("{{", at);
    if (open == std::string_view::npos) break;
    const std::size_t close = page.html.find("}}", open);
    if (close == std::string_view::npos) break;
    out.append(page.html.substr(at, open - at));
    const std::string key(page.html.substr(open + 2, close - open - 2));
    if (key == "CSP") out += csp;
    else if (key == "STYLE") out.append(page.css);
    else if (key == "SCRIPT") out.append(page.js);
    else if (auto it = fields.find(key); it != fields.end()) out += it->second;
    else throw Error(fmt::format("page template: no value for {{{{{}}}}}", key));
    at = close + 2;
  }
  out.append(page.html.substr(at));
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (char c : json_text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string base64(const void* data, std::size_t size) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= size; i += 3) {  // 3 bytes → 4 characters of 6 bits
    const unsigned v = unsigned{bytes[i]} << 16 | unsigned{bytes[i + 1]} << 8 | bytes[i + 2];
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t rest = size - i; rest > 0) {
    const unsigned v = unsigned{bytes[i]} << 16 | (rest == 2 ? unsigned{bytes[i + 1]} << 8 : 0u);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace vitattn::io
