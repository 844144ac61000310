#include "access.hpp"

#include <algorithm>
#include <charconv>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

namespace vitattn::serve {
namespace {

// Equal, in a time that depends on the lengths only (a wrong token's first bytes are not timed).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff = static_cast<unsigned char>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

bool token_given(const AccessRule& rule, const RequestHead& head) {
  const std::string bearer = "Bearer ";
  if (head.authorization && head.authorization->rfind(bearer, 0) == 0 &&
      same_secret(head.authorization->substr(bearer.size()), rule.token))
    return true;
  return head.token_param && same_secret(*head.token_param, rule.token);
}

bool listed(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

std::vector<std::string> host_values(const std::string& address, int port) {
  const bool v6 = address.find(':') != std::string::npos;  // "[::1]:8642"
  std::vector<std::string> hosts{v6 ? fmt::format("[{}]:{}", address, port) : fmt::format("{}:{}", address, port)};
  if (address == "127.0.0.1") hosts.push_back(fmt::format("localhost:{}", port));
  return hosts;
}

bool over_upload_limit(std::uint64_t bytes, std::uint64_t max) { return bytes > max; }

std::optional<Refusal> body_refusal(const AccessRule& rule, const RequestHead& head) {
  if (head.transfer_encoding) return Refusal{411, "a chunked body is not taken: send Content-Length"};
  if (!head.content_length) return Refusal{411, "a POST needs a Content-Length"};
  const std::string& text = *head.content_length;
  std::uint64_t length = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return Refusal{400, "Content-Length is no number"};
  if (over_upload_limit(length, rule.max_upload))
    return Refusal{413, fmt::format("the body of {} bytes is over the upload limit of {} bytes", length, rule.max_upload)};
  return std::nullopt;
}

std::optional<Refusal> access_refusal(const AccessRule& rule, const RequestHead& head) {
  if (!head.host || !listed(rule.hosts, *head.host))
    return Refusal{403, fmt::format("the Host header must name the server's address ({})", rule.hosts.front())};
  if (head.origin) {
    const bool own = std::any_of(rule.hosts.begin(), rule.hosts.end(),
                                 [&](const std::string& h) { return *head.origin == fmt::format("http://{}", h); });
    if (!own) return Refusal{403, "a request from another origin is refused"};
  }
  if (!rule.token.empty() && !token_given(rule, head)) return Refusal{401, "a token is required (Authorization: Bearer …)"};
  if (head.method == "POST") return body_refusal(rule, head);
  return std::nullopt;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace vitattn::serve
