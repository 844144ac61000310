#include "serve_options.hpp"

#include <fmt/format.h>

#include <memory>
#include <set>

namespace vitattn::cli {
namespace {

constexpr const char* kSettingsGroup = "Each model's settings (after its --model, up to the next)";

// CLI11 keeps one value per option for the whole command line; serve needs one per --model. So
// each setting is bound to `staged` and converted as soon as it is parsed (trigger_on_parse),
// into the entry of the --model before it; the next --model, or the end of the command line,
// hands that entry over to ServeOptions::models.
class ModelEntries {
 public:
  ModelOptions staged;  // the settings' options write here

  // A --model: the entry before it is complete; `file`'s starts, with no setting.
  void start(ServeOptions& o, const std::string& file) {
    finish(o);
    staged = ModelOptions{};
    staged.file = file;
    given_.clear();
    open_ = true;
  }

  // The end of the command line: the last entry is complete.
  void finish(ServeOptions& o) {
    if (!open_) return;
    staged.img_size_given = given_.count("--img-size") > 0;
    o.models.push_back(staged);
    open_ = false;
  }

  // A setting `name` (with `value`) is being parsed: it must follow a --model, once per model.
  void check_setting(const std::string& name, const std::string& value) {
    if (!open_)
      throw CLI::ValidationError(fmt::format("given before any --model; a model's settings follow its --model, as "
                                             "in --model FILE {} {}", name, value));
    if (!given_.insert(name).second)
      throw CLI::ValidationError(fmt::format("given twice for --model {}", staged.file));
  }

 private:
  bool open_ = false;           // a --model was given: `staged` is its entry
  std::set<std::string> given_;  // the settings given for it so far
};

// The image command's settings of a model file, each parsed into the --model before it.
void add_model_settings(CLI::App& serve, CLI::Option* model, const std::shared_ptr<ModelEntries>& entries) {
  ModelOptions& m = entries->staged;
  std::vector<CLI::Option*> settings{add_img_size_option(serve, m)};
  settings.front()->description("Input size S, a multiple of the model's patch size (default: its own); the position "
                                "embeddings are resampled");
  for (CLI::Option* option : add_normalisation_options(serve, m)) settings.push_back(option);
  for (CLI::Option* option : add_checkpoint_options(serve, m, model)) settings.push_back(option);
  for (CLI::Option* setting : settings) {
    const std::string name = setting->get_name();
    setting->group(kSettingsGroup)
        ->each([entries, name](const std::string& value) { entries->check_setting(name, value); })
        ->trigger_on_parse();
  }
}

}  // namespace

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
      "  vitattn serve --model vit_h14.safetensors --heads 16 --model dinov2.pth --family dinov2 --key teacher\n"
      "                                                  each model with its own settings, given after its --model\n"
      "  curl --data-binary @cat.jpg 'http://127.0.0.1:8642/api/map?layer=-1&head=mean' -o cat_cls.npy\n"
      "Binds 127.0.0.1 unless --host says otherwise; off loopback every request must carry the token.\n"
      "Ctrl-C or SIGTERM stops accepting, answers the requests in hand and exits 0.\n"
      "Exit status: 0 stopped by a signal; 2 usage or model error, or an address that cannot be bound.");
  auto entries = std::make_shared<ModelEntries>();
  CLI::Option* model =
      serve
          ->add_option_function<std::string>(
              "--model", [entries, &o](const std::string& file) { entries->start(o, file); },
              "A model to serve (a checkpoint or hf:ORG/NAME, as the image command's --model), with the settings "
              "given after it; repeat for several, chosen by index (model=I); none: the seeded model")
          ->check(model_source())
          ->type_name("FILE|hf:ORG/NAME")
          ->allow_extra_args(false)
          ->trigger_on_parse();
  serve->final_callback([entries, &o] { entries->finish(o); });
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
  add_precision_option(*serve, o.precision);
  add_model_settings(*serve, model, entries);
  add_verbosity_options(*serve, verbosity);
  return serve;
}

}  // namespace vitattn::cli
