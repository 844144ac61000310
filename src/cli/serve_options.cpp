#include "serve_options.hpp"

#include "options.hpp"

namespace vitattn::cli {

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o, int& verbosity) {
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve the maps over HTTP on this machine: load the models once, then POST an image's bytes to\n"
      "/api/map and get its map as the .npy (or the overlay PNG) the image command writes for it.\n"
      "The API, its limits and its security model: docs/serve.md.");
  serve->footer(
      "Examples:\n"
      "  vitattn serve                                   the seeded head on http://127.0.0.1:8642/\n"
      "  vitattn serve --model models/vit_cifar10_tintn.safetensors --model vit.safetensors --port 0\n"
      "  curl --data-binary @cat.jpg 'http://127.0.0.1:8642/api/map?layer=-1&head=mean' -o cat_cls.npy\n"
      "Binds 127.0.0.1 unless --host says otherwise; off loopback every request must carry the token.\n"
      "Ctrl-C or SIGTERM stops accepting, answers the requests in hand and exits 0.\n"
      "Exit status: 0 stopped by a signal; 2 usage or model error, or an address that cannot be bound.");
  serve->add_option("--model", o.models,
                    "A model to serve (a checkpoint or hf:ORG/NAME, as the image command's --model); repeat for "
                    "several, chosen by index (model=I); none: the seeded model")
      ->check(model_source())
      ->type_name("FILE|hf:ORG/NAME")
      ->allow_extra_args(false);
  serve->add_option("--host", o.host, "Address to listen on; off loopback (127.0.0.1, ::1) a token is required")
      ->capture_default_str()
      ->check(non_empty());
  serve->add_option("--port", o.port, "Port to listen on; 0: any free one (the URL printed says which)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  serve->add_option("--token", o.token,
                    "Secret every request must carry (Authorization: Bearer T, or ?token=T); off loopback without it "
                    "a random one is made and printed")
      ->check(non_empty());
  serve->add_option("--max-upload-mb", o.max_upload_mb, "Refuse a larger body (413), from its Content-Length, unread")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  serve->add_option("--max-pixels", o.max_pixels, "Refuse larger images (413), from their header, before decoding")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_option("--workers", o.workers, "Maps computed at once (the products' threads are shared among them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  serve->add_option("--queue", o.queue, "Requests that may wait for a worker; one more is answered 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  serve->add_option("--timeout", o.timeout, "Seconds a request's body may take to arrive (408), and each read or write")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve->add_option("--cache-mb", o.cache_mb,
                    "Memory for the report pages made (MB); the least recently used go first")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  add_verbosity_options(*serve, verbosity);
  return serve;
}

}  // namespace vitattn::cli
