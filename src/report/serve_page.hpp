#pragma once
// `vitattn serve`'s drop page (serve.html, serve.js, report.css; embedded at build time): an
// image in, the report page of it in a frame. Its policy is sent as a header only (the
// template has no meta tag): its own script and style by SHA-256, requests to its own server
// only (connect-src, frame-src 'self'), images from data: and blob:, no framing by others.
#include <string>

namespace vitattn::report {

std::string serve_page_html();
std::string serve_page_csp();

}  // namespace vitattn::report
