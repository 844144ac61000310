#pragma once
// `vitattn serve`'s HTTP server: the models opened once, a map per upload.
//
// Why cpp-httplib (Debian's libcpp-httplib-dev 0.11.4) and not hand-written HTTP: request
// framing (request lines, headers, Content-Length, keep-alive, percent-decoding of the
// query) is where hand-written servers get hostile input wrong; httplib is packaged by
// Debian, small, and its framing is fuzzed upstream. What vitattn writes itself is only
// the typed reading of the query (map_query.hpp, fuzzed in fuzz/) and the access rules
// (access.hpp), on top of it.
//
// Endpoints (docs/serve.md): GET /api/models, POST /api/map?model=&layer=&head=&method=&class=&format=,
// POST /api/report?model=&layer=&head=&method=&class=&name=&top=&pca=&text=&truncate= (→ JSON naming the page's id),
// GET /api/report/<id>[?download=1] (the page, from the cache). Every other path answers 404;
// no path names a file on disk.
//
// Nothing here logs: each refused or failed request is said through Events::log as one line
// (method, path without the query, status, reason), never with the token.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "map_job.hpp"

namespace vitattn::serve {

struct ServerSettings {
  std::string host = "127.0.0.1";
  int port = 8642;                        // 0: any free port (Events::listening says which)
  std::string token;                      // empty: none asked for (loopback only: the caller checks)
  std::uint64_t max_upload = 32u << 20;   // bytes, checked from Content-Length before the body is read
  std::uint64_t max_pixels = 100'000'000; // as the CLI's, checked from the image header before decoding
  int workers = 1;                        // maps computed at once
  int queue = 8;                          // requests waiting for a worker; one more: 503 with Retry-After
  int timeout_seconds = 30;               // reading a request's body, and each read and write
  std::uint64_t cache_bytes = 512u << 20; // the report pages kept (page_cache.hpp)
};

struct Events {
  std::function<void(const std::string& url)> listening;  // once bound: "http://127.0.0.1:8642/"
  std::function<void(const std::string& line)> log;       // a refused or failed request, one line
  std::function<bool()> stop_requested;                    // polled: true stops accepting, requests in hand finish
};

// Serves until stop_requested; returns once every request in hand is answered. Throws Error
// when the address cannot be bound.
void run_server(const std::vector<ServedModel>& models, const ServerSettings& settings, const Events& events);

}  // namespace vitattn::serve
