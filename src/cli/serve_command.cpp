#include "serve_command.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "interrupt.hpp"
#include "model_request.hpp"
#include "precision_option.hpp"
#include "pipeline/threads.hpp"
#include "pipeline/view.hpp"
#include "text_prompts.hpp"
#include "serve/access.hpp"
#include "serve/server.hpp"
#include "serve/token.hpp"

namespace vitattn::cli {
namespace {

// The served model's input size against the model, at start rather than at each request: a
// size its patches do not divide, or too many patches, is an error naming the model.
void check_input_size(const serve::ServedModel& served) {
  pipeline::EncoderView view;
  view.img_size = served.img_size;
  try {
    pipeline::check_view(served.model, view, served.name);
  } catch (const Error& e) {
    if (!e.subject() || !e.source().empty()) throw;
    throw Error(*e.subject(), e.detail(), served.name);
  }
}

// The model's text tower for text= (serve/map_job.hpp ServedTexts), tokenised by the CLI's own
// steps (text_prompts.hpp) with "text" as the option its messages name; none when the file has
// no text tower, or one whose embedding is not as wide as the image's (said once, at start).
std::optional<serve::ServedTexts> served_texts(model::OpenedModel& opened, const std::string& name) {
  if (!opened.text.tower.present()) return std::nullopt;
  try {
    check_embedding_widths(opened, "text", name);
  } catch (const Error& e) {
    spdlog::warn("{}: prompts are not taken", e.what());
    return std::nullopt;
  }
  serve::ServedTexts t;
  t.legrad_empty = legrad_empty_prompt_ids(opened, true);
  auto text = std::make_shared<model::OpenedModel>();  // the tokeniser's side only: the tower, the file it sits beside
  text->text = std::move(opened.text);
  text->file = opened.file;
  t.tower = std::shared_ptr<const TextTower>(text, &text->text.tower);
  t.ids = [text](const std::vector<std::string>& texts, bool truncate) { return text_id_rows(*text, texts, truncate, "text"); };
  t.words = [text](const serve::ServedTexts::Rows& rows) { return word_token_texts(*text, rows); };
  t.view = [text](const serve::ServedTexts::Rows& rows) { return prompt_token_texts(*text, rows); };
  return t;
}

// Each --model once, in order, with its own settings and class names (the picker and class=);
// none: the seeded model.
std::vector<serve::ServedModel> open_models(const ServeOptions& o, int verbosity) {
  std::vector<serve::ServedModel> models;
  std::vector<ModelOptions> entries = o.models;
  if (entries.empty()) entries.emplace_back();
  for (const ModelOptions& m : entries) {
    model::OpenedModel opened = open_requested_model(m, verbosity, true, true);
    const std::string name = m.file.empty() ? "the seeded model" : m.file;
    std::optional<serve::ServedTexts> texts = served_texts(opened, name);
    models.push_back({name, std::move(opened.model), std::move(opened.labels), m.img_size_given ? m.shape.img_size : 0,
                      std::move(texts)});
    check_input_size(models.back());
  }
  return models;
}

serve::ServerSettings server_settings(const ServeOptions& o) {
  serve::ServerSettings s;
  s.host = o.host;
  s.port = o.port;
  s.token = o.token;
  s.max_upload = static_cast<std::uint64_t>(o.max_upload_mb) << 20;
  s.max_pixels = o.max_pixels;
  s.workers = o.workers;
  s.cache_bytes = static_cast<std::uint64_t>(o.cache_mb) << 20;
  s.queue = o.queue;
  s.timeout_seconds = o.timeout;
  return s;
}

}  // namespace

int run_serve(const ServeOptions& o, int verbosity) {
  const InterruptGuard interrupt;  // from here on, Ctrl-C stops the server after the requests in hand
  serve::ServerSettings settings = server_settings(o);
  const bool loopback = serve::is_loopback(o.host);
  if (!loopback && settings.token.empty()) settings.token = serve::random_token();
  use_precision(o.precision);
  const std::vector<serve::ServedModel> models = open_models(o, verbosity);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  pipeline::set_library_threads(std::max(1, cores / o.workers));

  serve::Events events;
  events.listening = [&](const std::string& url) {
    // The URL on standard output (a script reads it, --port 0 chose the port); the token, when
    // the server made it, with it: the page's first load carries it.
    const bool made = o.token.empty() && !settings.token.empty();
    std::cout << url;
    if (made) std::cout << "?token=" << settings.token;
    std::cout << std::endl;
    spdlog::info("serving {} on {} (Ctrl-C stops){}", models.size() == 1 ? models.front().name : fmt::format("{} models", models.size()),
                 url, settings.token.empty() ? "" : "; every request must carry the token");
  };
  events.log = [](const std::string& line) { spdlog::warn("{}", line); };
  events.stop_requested = [] { return InterruptGuard::signal_received() != 0; };
  serve::run_server(models, settings, events);
  if (const int sig = InterruptGuard::signal_received()) spdlog::info("{}: stopped; every request in hand was answered", signal_name(sig));
  return 0;
}

}  // namespace vitattn::cli
