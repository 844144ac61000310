#pragma once
// Who may talk to the server, decided from a request's headers before its body is read: the
// Host header names the bound address (a page elsewhere cannot reach a loopback server through
// DNS rebinding: its requests carry its own host name), a POST from a browser carries the
// server's own Origin (browsers always send Origin on a cross-site POST; clients that are no
// browser, curl and scripts, send none and are let through), the token when the server has one
// (`Authorization: Bearer T`, or `token=T` in the query for a page's first load), a POST's
// declared Content-Length within the upload cap. No CORS: no response says another origin may
// read it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vitattn::serve {

struct AccessRule {
  std::vector<std::string> hosts;  // the Host values accepted: "127.0.0.1:8642" (and "localhost:8642" on loopback)
  std::string token;               // empty: none asked for
  std::uint64_t max_upload = 32u << 20;  // bytes
};

// The bound address and port as Host values: "ADDR:PORT", with "localhost:PORT" too when
// ADDR is 127.0.0.1 (what a browser sends for http://localhost:PORT/).
std::vector<std::string> host_values(const std::string& address, int port);

// What access_refusal reads of a request (header values; absent: nullopt).
struct RequestHead {
  std::string method;                         // "GET", "POST"…
  std::optional<std::string> host, origin, authorization, content_length, transfer_encoding;
  std::optional<std::string> token_param;     // the query's token=…
};

struct Refusal {
  int status = 400;
  std::string message;  // one line, no secret in it
};

// nullopt: go on. Else why not, in this order: 400/403 a missing or wrong Host (403), a
// foreign Origin (403), a missing or wrong token (401), a POST without a Content-Length
// or with a Transfer-Encoding (411), a declared length that is no number (400) or over
// the cap (413). The token is compared in constant time.
std::optional<Refusal> access_refusal(const AccessRule& rule, const RequestHead& head);

// The upload cap, one comparison for the declared Content-Length and the bytes read alike: a
// body of exactly `max` bytes is taken, one byte more is over.
bool over_upload_limit(std::uint64_t bytes, std::uint64_t max);

// The part of access_refusal about a POST's body alone: 411, 400 or 413 as there, else nullopt.
std::optional<Refusal> body_refusal(const AccessRule& rule, const RequestHead& head);

// True when `host` (an address or name the server is to bind) is a loopback address: 127.0.0.0/8, ::1, localhost.
bool is_loopback(const std::string& host);

}  // namespace vitattn::serve
