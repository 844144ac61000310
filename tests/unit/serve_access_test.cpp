// `vitattn serve`'s own request parsing: the access rules (serve/access.hpp), the body read
// within the cap (serve/upload_body.hpp) and the map query (serve/map_query.hpp). The HTTP side
// is tests/e2e/test_serve.py's.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "serve/access.hpp"
#include "serve/map_query.hpp"
#include "serve/upload_body.hpp"

namespace vitattn::serve {
namespace {

AccessRule rule(std::string token = "") { return {host_values("127.0.0.1", 8642), std::move(token), 1000}; }

RequestHead get(std::string host) {
  RequestHead h;
  h.method = "GET";
  h.host = std::move(host);
  return h;
}

int status(const AccessRule& r, const RequestHead& h) {
  const auto refusal = access_refusal(r, h);
  return refusal ? refusal->status : 0;
}

TEST(ServeAccess, HostMustNameTheBoundAddress) {
  EXPECT_EQ(host_values("127.0.0.1", 8642), (std::vector<std::string>{"127.0.0.1:8642", "localhost:8642"}));
  EXPECT_EQ(host_values("::1", 80), (std::vector<std::string>{"[::1]:80"}));
  EXPECT_EQ(status(rule(), get("127.0.0.1:8642")), 0);
  EXPECT_EQ(status(rule(), get("localhost:8642")), 0);
  EXPECT_EQ(status(rule(), get("127.0.0.1:8643")), 403);
  EXPECT_EQ(status(rule(), get("evil.example:8642")), 403);  // DNS rebinding
  RequestHead none = get("");
  none.host.reset();
  EXPECT_EQ(status(rule(), none), 403);
}

TEST(ServeAccess, OriginIsTheServersOwnOrNone) {
  RequestHead h = get("127.0.0.1:8642");
  h.origin = "http://127.0.0.1:8642";
  EXPECT_EQ(status(rule(), h), 0);
  h.origin = "http://localhost:8642";
  EXPECT_EQ(status(rule(), h), 0);
  h.origin = "https://127.0.0.1:8642";
  EXPECT_EQ(status(rule(), h), 403);
  h.origin = "null";  // a sandboxed frame or a file: page
  EXPECT_EQ(status(rule(), h), 403);
  // The whole value, not a part of it: foreign origins that hold the server's.
  for (const char* foreign : {"http://127.0.0.1:8642.evil.example", "http://127.0.0.1:86420", "http://evil/127.0.0.1:8642",
                              "http://evil.example/http://127.0.0.1:8642", "xhttp://127.0.0.1:8642", "http://127.0.0.1:864"}) {
    h.origin = foreign;
    EXPECT_EQ(status(rule(), h), 403) << foreign;
  }
}

TEST(ServeAccess, TokenByHeaderOrQueryNeverInTheMessage) {
  RequestHead h = get("127.0.0.1:8642");
  EXPECT_EQ(status(rule("s3cret"), h), 401);
  h.authorization = "Bearer s3cre";
  EXPECT_EQ(status(rule("s3cret"), h), 401);
  h.authorization = "bearer s3cret";
  EXPECT_EQ(status(rule("s3cret"), h), 401);
  h.authorization = "Bearer s3cret";
  EXPECT_EQ(status(rule("s3cret"), h), 0);
  h.authorization.reset();
  h.token_param = "s3cret";
  EXPECT_EQ(status(rule("s3cret"), h), 0);
  h.token_param = "s3cret ";
  const auto refusal = access_refusal(rule("s3cret"), h);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->message.find("s3cret"), std::string::npos);
}

TEST(ServeAccess, PostBodyDeclaredWithinTheCap) {
  RequestHead h = get("127.0.0.1:8642");
  h.method = "POST";
  EXPECT_EQ(status(rule(), h), 411);
  h.content_length = "1000";
  EXPECT_EQ(status(rule(), h), 0);
  h.content_length = "1001";
  EXPECT_EQ(status(rule(), h), 413);
  h.content_length = "1000000000000000000000000";  // overflows uint64
  EXPECT_EQ(status(rule(), h), 400);
  h.content_length = "-1";
  EXPECT_EQ(status(rule(), h), 400);
  h.content_length = "10";
  h.transfer_encoding = "chunked";
  EXPECT_EQ(status(rule(), h), 411);
}

// A body of `sizes` chunks, read with a cap of 1000 bytes and a deadline an hour away.
int read_chunks(const std::vector<std::size_t>& sizes, std::vector<std::uint8_t>& body, bool cut_short = false) {
  const ChunkSource source = [&](const ChunkSink& sink) {
    for (const std::size_t n : sizes)
      if (!sink(std::string(n, 'x').data(), n)) return false;
    return !cut_short;
  };
  return read_body(source, rule().max_upload, std::chrono::steady_clock::now() + std::chrono::hours(1), body);
}

// The cap is one rule for the declared length and the bytes read: exactly the cap is taken, one
// byte more is not, whichever way the body comes in chunks.
TEST(ServeAccess, BodyReadWithinTheCapExactlyAsDeclared) {
  EXPECT_FALSE(over_upload_limit(1000, 1000));
  EXPECT_TRUE(over_upload_limit(1001, 1000));
  for (const auto& sizes : std::vector<std::vector<std::size_t>>{{1000}, {999, 1}, {500, 499, 1}, {1, 999}}) {
    std::vector<std::uint8_t> body;
    EXPECT_EQ(read_chunks(sizes, body), 0) << sizes.size() << " chunks";
    EXPECT_EQ(body.size(), 1000u);
  }
  for (const auto& sizes : std::vector<std::vector<std::size_t>>{{1001}, {1000, 1}, {999, 2}, {500, 500, 1}}) {
    std::vector<std::uint8_t> body;
    EXPECT_EQ(read_chunks(sizes, body), 413) << sizes.size() << " chunks";
    EXPECT_LE(body.size(), 1000u) << "nothing past the cap is kept";
  }
  std::vector<std::uint8_t> body;
  EXPECT_EQ(read_chunks({10}, body, true), 400) << "cut short";
  const ChunkSource late = [](const ChunkSink& sink) { return sink("x", 1); };
  body.clear();
  EXPECT_EQ(read_body(late, 1000, std::chrono::steady_clock::now() - std::chrono::seconds(1), body), 408);
}

TEST(ServeAccess, Loopback) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.8.9.10"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("127.evil.example"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
  EXPECT_FALSE(is_loopback("192.168.1.2"));
}

MapQuery parse(std::multimap<std::string, std::string> p) { return parse_map_query(p); }

TEST(ServeMapQuery, DefaultsAreTheCLIs) {
  const MapQuery q = parse({});
  EXPECT_EQ(q.model, 0u);
  EXPECT_EQ(q.layer, -1);
  EXPECT_EQ(q.head, pipeline::HeadChoice::fuse);
  EXPECT_EQ(q.fusion, HeadFusion::mean);
  EXPECT_EQ(q.method, pipeline::MapMethod::attention);
  EXPECT_FALSE(q.classes);
  EXPECT_EQ(q.format, MapFormat::npy);
}

TEST(ServeMapQuery, EveryParameter) {
  const MapQuery q = parse({{"model", "2"}, {"layer", "-3"}, {"head", "5"}, {"method", "grad-rollout"},
                            {"class", "7"}, {"format", "png"}, {"token", "x"}});
  EXPECT_EQ(q.model, 2u);
  EXPECT_EQ(q.layer, -3);
  EXPECT_EQ(q.head, pipeline::HeadChoice::index);
  EXPECT_EQ(q.head_index, 5);
  EXPECT_EQ(q.method, pipeline::MapMethod::grad_rollout);
  EXPECT_EQ(q.classes, "7");
  EXPECT_EQ(q.format, MapFormat::png);
  EXPECT_EQ(parse({{"head", "max"}}).fusion, HeadFusion::max);
}

// head= and class= take the CLI's words (pipeline::parse_head, pipeline/class_choice.hpp): any
// case, all, labels and lists as given; whether they fit the model is map_options'.
TEST(ServeMapQuery, HeadAndClassTakeTheCLIsWords) {
  EXPECT_EQ(parse({{"head", "MEAN"}}).fusion, HeadFusion::mean);
  EXPECT_EQ(parse({{"head", "all"}}).head, pipeline::HeadChoice::all);
  EXPECT_EQ(parse({{"class", "cougar, lion"}}).classes, "cougar, lion");
}

TEST(ServeMapQuery, RefusesWithTheParameterNamed) {
  for (const auto& [name, value] : std::multimap<std::string, std::string>{
           {"layer", "1.5"}, {"layer", " 1"}, {"layer", ""}, {"layer", "99999"}, {"head", "-1"}, {"head", "1.5"},
           {"head", "every"}, {"method", "all"}, {"class", ""}, {"class", "3\n4"}, {"format", "jpg"}, {"model", "1e3"}, {"path", "/etc"}}) {
    try {
      parse({{name, value}});
      ADD_FAILURE() << name << "=" << value << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(name, 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(parse({{"layer", "1"}, {"layer", "2"}}), Error);
}

// A message is logged as one line: a name or value decoded with a newline (%0A) or other
// bytes outside printable ASCII is shown with \xNN, and long text is cut.
TEST(ServeMapQuery, AMessageShowsTheRequestTextOnOneLine) {
  for (const auto& [name, value] : std::multimap<std::string, std::string>{
           {"x\nHost: evil", "1"}, {"layer", "1\r\nforged: line"}, {"method", std::string(200, 'a') + "\n"},
           {"format", "\xC3\xA9"}}) {
    try {
      parse({{name, value}});
      ADD_FAILURE() << "taken";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find_first_of("\r\n"), std::string::npos) << m;
      EXPECT_LT(m.size(), 200u) << m;
    }
  }
  try {
    parse({{"layer", "1\n2"}});
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("layer=1\\x0A2: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace vitattn::serve
