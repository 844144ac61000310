#include "server.hpp"

#include <httplib.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "access.hpp"
#include "download_name.hpp"
#include "core/error.hpp"
#include "image/image_loader.hpp"
#include "page_cache.hpp"
#include "report/report_page.hpp"
#include "report/serve_page.hpp"
#include "report_job.hpp"
#include "upload_body.hpp"

namespace vitattn::serve {
namespace {

using Clock = std::chrono::steady_clock;

// The reason of the request this thread is answering, for the log line (httplib calls the
// logger on the thread that answered).
thread_local std::string t_reason;

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  // A message may quote the request (its parameters): invalid UTF-8 is replaced, not thrown on.
  std::string body = nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  body += '\n';
  res.set_content(body, "application/json");
  t_reason = message;
}

// An upload the map or page could not be made of: 413 for an image over the pixel limit
// (found from its header, before decoding), else 400 (no image the CLI reads, a view the model
// does not have).
void answer_upload_error(httplib::Response& res, const Error& e) {
  const bool pixels = e.subject() && e.subject()->role == image::roles::pixel_limit;
  answer_error(res, pixels ? 413 : 400, e.what());
}

// A request's path as the log shows it: bytes outside printable ASCII percent-encoded (a
// hostile path cannot break the log's lines or its encoding).
std::string loggable(const std::string& path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : path.substr(0, 200)) {
    const auto b = static_cast<unsigned char>(c);
    if (b > 0x20 && b < 0x7f && b != '%') {
      out += c;
      continue;
    }
    out += '%';
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// The words for a status httplib answered by itself (a request it could not parse, no route).
std::string status_words(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "no such path";
    case 405: return "method not allowed";
    case 408: return "request timeout";
    case 413: return "body too large";
    case 414: return "URI too long";
    default: return fmt::format("error {}", status);
  }
}

// Requests admitted (reading their body, waiting for a worker or computing): at most
// workers + queue; one more is turned away (503) before its body is read. Of them, `workers`
// compute at once.
class Admission {
 public:
  Admission(int workers, int queue) : workers_(workers), limit_(workers + queue) {}
  bool try_enter() {
    std::lock_guard lock(m_);
    if (admitted_ >= limit_) return false;
    ++admitted_;
    return true;
  }
  void leave() {
    std::lock_guard lock(m_);
    --admitted_;
  }
  void start_work() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return running_ < workers_; });
    ++running_;
  }
  void end_work() {
    {
      std::lock_guard lock(m_);
      --running_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int admitted_ = 0, running_ = 0;
  const int workers_, limit_;
};

// RAII over Admission's two steps.
struct Admitted {
  Admission& a;
  ~Admitted() { a.leave(); }
};
struct Working {
  Admission& a;
  explicit Working(Admission& adm) : a(adm) { a.start_work(); }
  ~Working() { a.end_work(); }
};

std::optional<std::string> header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

RequestHead request_head(const httplib::Request& req) {
  RequestHead head;
  head.method = req.method;
  head.host = header(req, "Host");
  head.origin = header(req, "Origin");
  head.authorization = header(req, "Authorization");
  head.content_length = header(req, "Content-Length");
  head.transfer_encoding = header(req, "Transfer-Encoding");
  if (req.has_param("token")) head.token_param = req.get_param_value("token");
  return head;
}

nlohmann::json models_json(const std::vector<ServedModel>& models) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < models.size(); ++i) {
    const VitModel& m = models[i].model;
    list.push_back({{"index", i},
                    {"name", models[i].name},
                    {"layers", m.n_layers()},
                    {"heads", m.n_heads},
                    {"classes", m.n_classes()},
                    {"class_names", models[i].labels.names},
                    {"texts", models[i].texts.has_value()}});
  }
  return list;
}

// The body's chunks as httplib reads them (upload_body.hpp's source).
ChunkSource chunks_of(const httplib::ContentReader& reader) {
  return [&reader](const ChunkSink& sink) { return reader(sink); };
}

class Service {
 public:
  Service(const std::vector<ServedModel>& models, const ServerSettings& s, const Events& events)
      : models_(models), settings_(s), events_(events), admission_(s.workers, s.queue), cache_(s.cache_bytes) {}

  void install(httplib::Server& svr) {
    // A refusal answered before the body is read leaves the body unread, and closing a socket
    // with unread data resets it: the client may lose the answer. So a map upload whose
    // declared length is within the cap is refused by its handler, after the body is read and
    // dropped; one over the cap, or without a length, at once. A client that sends
    // `Expect: 100-continue` (curl does for large bodies) hears every refusal before sending.
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_reason.clear();
      const RequestHead head = request_head(req);
      if (const auto refusal = head.method == "POST" ? body_refusal(rule_, head) : std::nullopt) {
        refuse(res, *refusal);
        return httplib::Server::HandlerResponse::Handled;
      }
      const auto refusal = access_refusal(rule_, head);
      const bool upload = head.method == "POST" && (req.path == "/api/map" || req.path == "/api/report");
      if (!refusal || upload) return httplib::Server::HandlerResponse::Unhandled;
      refuse(res, *refusal);
      return httplib::Server::HandlerResponse::Handled;
    });
    svr.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_reason.clear();
      const auto refusal = access_refusal(rule_, request_head(req));
      if (!refusal) return 100;
      refuse(res, *refusal);
      return refusal->status;
    });
    svr.Get("/api/models", [this](const httplib::Request&, httplib::Response& res) {
      std::string body = models_json(models_).dump();
      body += '\n';
      res.set_content(body, "application/json");
    });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy", report::serve_page_csp());
      res.set_content(report::serve_page_html(), "text/html; charset=utf-8");
    });
    svr.Post("/api/map", [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      upload(req, res, reader, QueryKind::map);
    });
    svr.Post("/api/report", [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      upload(req, res, reader, QueryKind::report);
    });
    svr.Get(R"(/api/report/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      report_page(req, res);
    });
    svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // our own answer
      answer_error(res, res.status, status_words(res.status));
      return httplib::Server::HandlerResponse::Handled;
    }));
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      answer_error(res, 500, "internal error");
    });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      if (res.status < 400 || !events_.log) return;
      events_.log(fmt::format("{} {} → {}: {}", loggable(req.method), loggable(req.path), res.status,
                              t_reason.empty() ? status_words(res.status) : t_reason));
    });
  }

  void set_rule(AccessRule rule) { rule_ = std::move(rule); }

 private:
  static void refuse(httplib::Response& res, const Refusal& refusal) {
    answer_error(res, refusal.status, refusal.message);
    if (refusal.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  }

  // POST /api/map and /api/report: the same checks, limits and queue; then the map, or the
  // report page (from the cache when the same bytes and options were sent before).
  void upload(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader, QueryKind kind) {
    const auto deadline = Clock::now() + std::chrono::seconds(settings_.timeout_seconds);
    if (const auto refusal = access_refusal(rule_, request_head(req))) {  // the pre-routing handler let it through
      std::vector<std::uint8_t> dropped;
      read_body(chunks_of(reader), settings_.max_upload, deadline, dropped);
      return refuse(res, *refusal);
    }
    if (req.is_multipart_form_data())
      return answer_error(res, 415, "send the image's bytes as the body, not a multipart form");
    MapQuery query;
    try {
      query = parse_map_query(req.params, kind);
    } catch (const Error& e) {
      return answer_error(res, 400, e.what());
    }
    if (query.model >= models_.size())
      return answer_error(res, 404, fmt::format("model={}: the server has models 0…{}", query.model, models_.size() - 1));
    if (!admission_.try_enter()) {
      res.set_header("Retry-After", "1");
      return answer_error(res, 503, "busy: every worker and queue place is taken");
    }
    const Admitted admitted{admission_};
    std::vector<std::uint8_t> body;
    if (const int refusal = read_body(chunks_of(reader), settings_.max_upload, deadline, body))
      return answer_error(res, refusal, refusal == 413 ? "the body is over the upload limit"
                                        : refusal == 408 ? "the body took longer than the request timeout"
                                                         : "the body ended before its Content-Length");
    if (kind == QueryKind::report) return report(res, body, query);
    const Working working(admission_);
    try {
      const MapAnswer answer = compute_map(body, "the upload", models_[query.model], query, settings_.max_pixels);
      res.set_content(reinterpret_cast<const char*>(answer.bytes.data()), answer.bytes.size(), answer.content_type.c_str());
    } catch (const Error& e) {
      answer_upload_error(res, e);
    }
  }

  // The page of an upload: found in the cache (no worker taken), or made and kept. Answers
  // {"id", "name", "bytes", "cached"}; the page is then GET /api/report/<id>.
  void report(httplib::Response& res, const std::vector<std::uint8_t>& body, const MapQuery& query) {
    const std::string id = report_id(body, query);
    std::shared_ptr<const CachedPage> page = cache_.find(id);
    const bool cached = page != nullptr;
    if (!page) {
      const Working working(admission_);
      try {
        page = std::make_shared<const CachedPage>(
            CachedPage{query.name, compute_report(body, "the upload", models_[query.model], query, settings_.max_pixels)});
      } catch (const Error& e) {
        return answer_upload_error(res, e);
      }
      if (!cache_.put(id, page))
        return answer_error(res, 507, fmt::format("the report page takes {:.1f} MB, more than the whole cache ({:.0f} MB)",
                                                  static_cast<double>(page->html.size()) / 1e6,
                                                  static_cast<double>(settings_.cache_bytes) / (1 << 20)));
    }
    std::string answer =
        nlohmann::json{{"id", id}, {"name", page->name}, {"bytes", page->html.size()}, {"cached", cached}}.dump();
    answer += '\n';
    res.set_content(answer, "application/json");
  }

  // GET /api/report/<id>[?download=1]: the page, with its CSP as a header too (and only this
  // server may frame it); 404 when the cache no longer holds it (the drop page then posts again).
  void report_page(const httplib::Request& req, httplib::Response& res) {
    for (const auto& [name, value] : req.params)
      if (name != "token" && !(name == "download" && value == "1"))
        return answer_error(res, 400, "a report page takes download=1 and token only");
    const std::shared_ptr<const CachedPage> page = cache_.find(req.matches[1].str());
    if (!page) return answer_error(res, 404, "no such report: it was never made, or the cache let it go; post the image again");
    std::string csp = report::report_csp();
    csp += "; frame-ancestors 'self'";
    res.set_header("Content-Security-Policy", csp);
    if (req.has_param("download")) res.set_header("Content-Disposition", report_disposition(page->name));
    res.set_content(page->html, "text/html; charset=utf-8");
  }

  const std::vector<ServedModel>& models_;
  const ServerSettings& settings_;
  const Events& events_;
  Admission admission_;
  PageCache cache_;
  AccessRule rule_;
};

}  // namespace

void run_server(const std::vector<ServedModel>& models, const ServerSettings& settings, const Events& events) {
  httplib::Server svr;
  // A thread per connection in hand: the workers, the queue, and a few more to turn the next away with 503.
  const auto threads = static_cast<std::size_t>(settings.workers + settings.queue + 4);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(settings.max_upload);
  svr.set_read_timeout(settings.timeout_seconds);
  svr.set_write_timeout(settings.timeout_seconds);
  // One request a connection: a request refused before its body is read leaves that body
  // unread, and on a kept-alive connection it would be read as the next request. It also
  // keeps idle connections from holding the pool's threads and delaying a shutdown.
  svr.set_keep_alive_max_count(1);
  svr.set_default_headers({{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-store"}});
  // The listening thread waits in poll for at most 100 ms before accept, not in accept alone.
  // Ctrl-C/SIGTERM go to that thread (the process's first); ThreadSanitizer (GCC 12's) holds a
  // signal that lands in accept until accept returns, so an idle server never heard it.
  svr.set_idle_interval(0, 100'000);
  Service service(models, settings, events);
  service.install(svr);

  const int port = settings.port == 0 ? svr.bind_to_any_port(settings.host) : settings.port;
  if (port < 0 || (settings.port != 0 && !svr.bind_to_port(settings.host, port)))
    throw Error(fmt::format("cannot listen on {}:{} (in use, or no such local address)", settings.host, settings.port));
  service.set_rule({host_values(settings.host, port), settings.token, settings.max_upload});
  if (events.listening) events.listening(fmt::format("http://{}/", host_values(settings.host, port).front()));

  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done.load()) {
      // httplib's stop() does nothing until listen has begun (is_running): a stop asked for
      // before that is asked again on the next round, not lost.
      if (events.stop_requested && events.stop_requested() && svr.is_running()) {
        svr.stop();  // no new connection; the pool finishes the requests in hand before listen returns
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  svr.listen_after_bind();
  done = true;
  watcher.join();
}

}  // namespace vitattn::serve
