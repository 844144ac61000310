#pragma once
// One self-contained HTML page from a template kept in src/report/ (embedded at build time):
// the style, the script and JSON data go inline, and a Content-Security-Policy meta tag lets
// the page run exactly that script and style (named by their SHA-256) and show images from
// data: URIs, and nothing from anywhere else.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace vitattn::report {

struct PageTemplate {
  std::string_view html;        // with {{CSP}}, {{STYLE}}, {{SCRIPT}} and the caller's {{KEY}}s
  std::string_view css, css_sha256;
  std::string_view js, js_sha256;
};

// The template with every {{KEY}} replaced in one pass (what is put in is never searched
// again): CSP, STYLE and SCRIPT from the template, GENERATOR vitattn's mark
// (files::page_generator_tag: the one sign that vitattn may replace the page), the rest from
// `fields`, given ready to insert. Throws Error on a {{KEY}} that has no value, and on a
// template without {{GENERATOR}}, which must come within files::kPageMarkWithin bytes.
std::string render_page(const PageTemplate& page, const std::map<std::string, std::string>& fields);

// The Content-Security-Policy render_page puts in the page's meta tag: a server sends it as a
// header too (a header can also say frame-ancestors, which a meta tag cannot).
std::string page_csp(const PageTemplate& page);

// Text for an HTML element or a quoted attribute: & < > " ' escaped.
std::string html_escape(std::string_view text);

// JSON text made safe inside <script type="application/json">: every '<' (which JSON only
// has inside strings) becomes \u003c, so no "</script>" can end the block early.
std::string script_safe_json(std::string_view json_text);

// RFC 4648 base64 with padding, on one line (no line breaks): OpenSSL's EVP_EncodeBlock, from
// the libcrypto the hub code already links for SHA-256. Checked against RFC 4648's test
// vectors in tests/unit/html_page_test.cpp.
std::string base64(const void* data, std::size_t size);

}  // namespace vitattn::report
