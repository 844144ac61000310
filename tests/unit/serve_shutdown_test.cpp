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

// run_server on a thread; false when it has not returned within `limit` (the thread is then
// left hanging, and the test process ends without joining it).
bool returns_within(const ServerSettings& settings, const Events& events, std::chrono::seconds limit) {
  static const std::vector<ServedModel> no_models;
  std::promise<void> returned;
  std::future<void> done = returned.get_future();
  std::thread([&settings, &events, r = std::move(returned)]() mutable {
    run_server(no_models, settings, events);
    r.set_value();
  }).detach();
  return done.wait_for(limit) == std::future_status::ready;
}

TEST(ServeShutdown, AStopAskedBeforeListeningEndsTheServer) {
  ServerSettings settings;
  settings.host = "127.0.0.1";
  settings.port = 0;  // any free port
  Events events;
  events.stop_requested = [] { return true; };
  for (int round = 0; round < 40; ++round) {
    if (!returns_within(settings, events, 10s)) {
      // A hung run_server still uses settings and events: end the process, not just the test.
      std::fprintf(stderr, "round %d: run_server did not return within 10 s of a stop asked before it listened\n", round);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
}

}  // namespace
}  // namespace vitattn::serve
