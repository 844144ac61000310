#pragma once
// `vitattn serve [--model M]… [--host H] [--port P] …`: its options and its help. What it does
// is serve_command.hpp's.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace vitattn::cli {

struct ServeOptions {
  std::vector<std::string> models;  // each an entry of the page's picker, in this order; none: the seeded model
  std::string host = "127.0.0.1";
  int port = 8642;                  // 0: any free port (printed)
  std::string token;                // required off loopback; empty there: a random one is made and printed
  int max_upload_mb = 32;
  std::uint64_t max_pixels = 100'000'000;
  int workers = 1;
  int queue = 8;
  int timeout = 30;                 // seconds
  int cache_mb = 512;               // the report pages kept (2^20 bytes a MB)
};

// Declares the `serve` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& options, int& verbosity);

}  // namespace vitattn::cli
