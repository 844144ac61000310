#include "report/html_page.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>

#include "core/error.hpp"
#include "files/file_kind.hpp"

namespace vitattn::report {

std::string page_csp(const PageTemplate& page) {
  return fmt::format(
      "default-src 'none'; img-src data:; style-src 'sha256-{}'; script-src 'sha256-{}'; base-uri 'none'; "
      "form-action 'none'",
      page.css_sha256, page.js_sha256);
}

std::string render_page(const PageTemplate& page, const std::map<std::string, std::string>& fields) {
  const std::string csp = page_csp(page);
  if (page.html.find("{{GENERATOR}}") == std::string_view::npos)
    throw Error("page template: no {{GENERATOR}}: a page without vitattn's mark could never be replaced");
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
    else if (key == "GENERATOR") out += files::page_generator_tag();
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
  // EVP_EncodeBlock takes an int count, so long inputs go in pieces; a piece a multiple of
  // 3 bytes long ends on a whole group, without padding, and the pieces' texts simply join.
  constexpr std::size_t kPiece = std::size_t{3} << 24;  // 48 MiB in, 64 MiB out
  const auto* in = static_cast<const unsigned char*>(data);
  std::string out((size + 2) / 3 * 4, '\0');
  auto* to = reinterpret_cast<unsigned char*>(out.data());
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(kPiece, size - done);
    // Writes 4 characters per 3 bytes (the last group padded) and a '\0' after them: the
    // next piece's first byte, or out's own terminator after the last piece.
    const int written = EVP_EncodeBlock(to, in + done, static_cast<int>(n));
    to += written;
    done += n;
  }
  return out;
}

}  // namespace vitattn::report
