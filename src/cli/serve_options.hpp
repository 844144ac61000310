#pragma once
// `vitattn serve [--model M [SETTING]…]… [--host H] [--port P] …`: its options and its help.
// What it does is serve_command.hpp's.
//
// Each model takes the image command's settings of a model file (--img-size, --mean, --std,
// --key, --family, --heads, --eps, --gelu, --pos-interp: declared by the same functions of
// options.hpp, so with the same checks), given after its --model and up to the next one:
//   vitattn serve --model vit_h14.safetensors --heads 16 --model dinov2.pth --family dinov2
// A setting before any --model, or twice for one model, is a usage error.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"

namespace vitattn::cli {

struct ServeOptions {
  // Each --model with the settings given after it, an entry of the page's picker, in this
  // order; none: the seeded model (seed 0, the default shape).
  std::vector<ModelOptions> models;
  std::string host = "127.0.0.1";
  int port = 8642;                  // 0: any free port (printed)
  std::string token;                // required off loopback; empty there: a random one is made and printed
  int max_upload_mb = 32;
  std::uint64_t max_pixels = 100'000'000;
  int workers = 1;
  int queue = 8;
  int timeout = 30;                 // seconds
  int cache_mb = 512;               // the report pages kept (2^20 bytes a MB)
  Precision precision = Precision::fp32;  // --precision: every model's weight products (core/gemm_bf16.hpp)
};

// Declares the `serve` subcommand on `app`, with its own help and examples; its -q and -v
// count into `verbosity`.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& options, int& verbosity);

}  // namespace vitattn::cli
