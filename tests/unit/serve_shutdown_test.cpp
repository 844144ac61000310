// run_server's shutdown (serve/server.hpp): a stop asked for at any moment ends the server.
// httplib's Server::stop() does nothing until listen has begun; a stop asked for before that
// (a SIGTERM right after the URL is printed) must not be lost, or the server serves forever.
// Each round asks for the stop before run_server is even called, so the watcher sees it at
// once, usually before the listening thread has started listening. Its own executable: it
// links cpp-httplib, which the unit tests do not.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "serve/server.hpp"

namespace vitattn::serve {
namespace {

using namespace std::chrono_literals;

// run_server on a thread, joined when it returned within `limit`; when it did not, the process
// ends at once (the hung thread still uses settings and events, and cannot be joined).
void returns_within(int round, const ServerSettings& settings, const Events& events, std::chrono::seconds limit) {
  const std::vector<ServedModel> no_models;
  std::promise<void> returned;
  std::future<void> done = returned.get_future();
  std::thread server([&] {
    run_server(no_models, settings, events);
    returned.set_value();
  });
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "round %d: run_server did not return within %lld s of a stop asked before it listened\n", round,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  server.join();
}

TEST(ServeShutdown, AStopAskedBeforeListeningEndsTheServer) {
  ServerSettings settings;
  settings.host = "127.0.0.1";
  settings.port = 0;  // any free port
  Events events;
  events.stop_requested = [] { return true; };
  for (int round = 0; round < 40; ++round) returns_within(round, settings, events, 10s);
}

}  // namespace
}  // namespace vitattn::serve
