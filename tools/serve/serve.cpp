// ordo serve: a local HTTP server, one more client of the library API (<ordo/ordo.h>) beside the
// command line. It answers POST /v1/embeddings in OpenAI's shape, with the texts of concurrent
// requests run in one forward pass (batcher.h); ordo's own endpoints (/tokenize, /fill, /score,
// /compare, /trace, /attention, /view) answer with the JSON of the matching command's --json,
// built by the same functions (tools/cli/results_json.h); GET / is the page of `ordo view`, live.
//
// HTTP is cpp-httplib (Debian's libcpp-httplib-dev): maintained, packaged by Debian, and nothing else
// to depend on; its connections are served with a deadline for the whole request (connection.h).
#include "tools/serve/serve.h"

#include <httplib.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ordo/compare.h>
#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/json_out.h"
#include "tools/cli/results_json.h"
#include "tools/serve/batcher.h"
#include "tools/serve/connection.h"
#include "tools/serve/routes.h"
#include "tools/serve/service.h"

namespace ordo::serve {

using namespace ordo::cli;  // the commands' option parsing and what they share (tools/cli/cli.h)

namespace {

using Clock = std::chrono::steady_clock;

// With a charset, httplib leaves the body uncompressed (it compresses plain "application/json"):
// brotli at its default quality takes about 100 ms for the 56 KB of a /view answer, twenty times
// the time to compute it, to save nothing on loopback.
constexpr const char* kJson = "application/json; charset=utf-8";

template <class Json>
void send_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kJson);
}

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  res.set_content(error_json(e), kJson);
}

// ---- stopping on SIGTERM and SIGINT ------------------------------------------------------------------
// httplib's Server::stop() is not safe to call from a signal handler (it takes locks and closes
// sockets), so the handler only writes a byte to a pipe; a thread waiting on the pipe calls stop().
// The signal may land on any thread (OpenBLAS starts its own before main), which a pipe does not mind.

int g_stop_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  const char byte = 1;
  const ssize_t n = ::write(g_stop_pipe[1], &byte, 1);
  (void)n;  // the pipe holds the first byte; later ones need not arrive
}

// Why binding host:port failed, asked again of a plain socket (httplib says only that it failed).
int bind_errno(const std::string& host, int port) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_PASSIVE;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return EADDRNOTAVAIL;
  int err = 0;
  const int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  const int yes = 1;
  if (fd < 0)
    err = errno;
  else if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0 ||
           ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 1) != 0)
    err = errno;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return err;
}

// Paths and the one method each answers: another method there is 405, an unknown path 404.
const std::map<std::string, std::string> kRoutes = {
    {"/", "GET"},       {"/health", "GET"},   {"/v1/embeddings", "POST"}, {"/tokenize", "POST"},  {"/fill", "POST"},
    {"/score", "POST"}, {"/compare", "POST"}, {"/trace", "POST"},         {"/attention", "POST"}, {"/view", "POST"}};

thread_local Clock::time_point t_request_start;

// Every answer goes whole: a Range header is ignored (RFC 9110 lets a server ignore it). httplib
// otherwise cut any answer to the range asked, a JSON error included ('{"erro' for "bytes=0-5"),
// which fuzz_http found. The request is httplib's own (non-const) object, handed over as const.
void ignore_ranges(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).ranges.clear();
}

// A path as the request log shows it: a control character (a newline would start a line of its own),
// a space or a backslash as \xHH, so that one request is one line of four fields whatever its path holds.
std::string log_path(const std::string& path) {
  return cli::one_line(path, " \\");
}

}  // namespace

void install_routes(Server& server, Service& service, const Settings& settings, const std::string& page,
                    long max_body) {
  // Each endpoint reads its body itself (a content reader): httplib, left to read it, parses a body sent
  // as application/x-www-form-urlencoded (what `curl -d` says) into form fields and refuses one past
  // 8 KiB with 413, a limit compiled into Debian's library; the body is JSON whatever the header says.
  auto endpoint = [&service, max_body](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& read) {
    // The body is read whole even when the request is refused: a body left unread would be taken for
    // the next request on the connection. One that is not read to its end closes the connection.
    const bool multipart = req.is_multipart_form_data();
    std::string body;
    bool too_large = false;
    const bool whole = multipart
                           ? read([](const httplib::MultipartFormData&) { return true; },  // parts read and dropped
                                  [](const char*, size_t) { return true; })
                           : read([&](const char* data, size_t n) {
                               if (body.size() + n > size_t(max_body)) return !(too_large = true);
                               body.append(data, n);
                               return true;
                             });
    too_large = too_large || res.status == 413;  // httplib's own check of a Content-Length past --max-body
    if (!whole || too_large) serve::Server::close_after_answer(req);
    if (serve::Server::request_timed_out())
      return send_error(res, {408, "request_timeout",
                              "the request did not arrive whole within the server's deadline (ordo serve --timeout)"});
    if (multipart && !too_large)
      return send_error(res, {415, "invalid_request_error", "the body is JSON, not multipart/form-data"});
    if (!whole && !too_large)
      return send_error(res, {400, "invalid_request_error",
                              "the body could not be read whole (it ended early, or its chunks were malformed)"});
    if (too_large) {
      return send_error(res,
                        {413, "request_too_large", "the body is larger than the server takes (ordo serve --max-body)"});
    }
    const Answer a = answer(service, req.path, body);
    res.status = a.status;
    res.set_content(a.json, kJson);
  };
  for (const char* path :
       {"/v1/embeddings", "/tokenize", "/fill", "/score", "/compare", "/trace", "/attention", "/view"})
    server.Post(path, endpoint);
  server.Get("/health", [&settings](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              ojson{{"status", "ok"},
                    {"version", ordo::version()},
                    {"model", settings.model_name},
                    {"batching", settings.batching}});
  });
  server.Get("/", [&page](const httplib::Request&, httplib::Response& res) {
    res.set_content(page, "text/html; charset=utf-8");
  });
  // What httplib answers itself (no route, a body past --max-body, a request it cannot read) gets
  // the same JSON error as the endpoints; a known path asked with another method is 405.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    ignore_ranges(req);
    if (!res.body.empty()) return;             // an endpoint's own error
    if (serve::Server::request_timed_out()) {  // the request line or headers were still arriving
      serve::Server::close_after_answer(req);
      return send_error(res, {408, "request_timeout",
                              "the request did not arrive whole within the server's deadline (ordo serve --timeout)"});
    }
    const auto route = kRoutes.find(req.path);
    if (res.status == 404 && route != kRoutes.end() && req.method != route->second) {
      res.status = 405;
      res.set_header("Allow", route->second);
      send_error(res, {405, "method_not_allowed", req.path + " takes " + route->second + ", not " + req.method});
    } else if (res.status == 404) {
      send_error(res, {404, "not_found", "no endpoint " + req.path + " (see docs/serve.md)"});
    } else if (res.status == 413) {
      send_error(res, {413, "request_too_large", "the body is larger than the server takes (ordo serve --max-body)"});
    } else {
      send_error(res, {res.status, "invalid_request_error", "the request could not be read as HTTP/1.1"});
    }
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    send_error(res, {500, "server_error", "internal failure: " + what});
  });
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    t_request_start = Clock::now();
    ignore_ranges(req);
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

// What `ordo serve --help` says first: the server in one paragraph.
const char* const kServeAbout =
    "A local HTTP server: POST /v1/embeddings (OpenAI's shape; the texts of concurrent requests "
    "run in one forward pass), ordo's own /tokenize, /fill, /score, /compare, /trace, /attention "
    "and /view (the JSON of each command's --json), and at / the page of ordo view, live: type a "
    "sentence and every map follows. Binds to 127.0.0.1 unless --host says otherwise; one line "
    "per request on stderr; SIGTERM or SIGINT finishes the requests in flight, then exits 0. Each "
    "endpoint's requests, answers and errors: docs/serve.md.";

int cmd_serve(int argc, char** argv) {
  cxxopts::Options o("ordo serve", kServeAbout);
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "threads", "the engine's threads for one pass's matrix work (0: one per core)",
      cxxopts::value<int>()->default_value("0"))("host", "address to listen on",
                                                 cxxopts::value<std::string>()->default_value("127.0.0.1"))(
      "port", "port to listen on (0: any free one, printed at start)", cxxopts::value<int>()->default_value("8080"))(
      "http-threads",
      "connections served at once; a request waiting for its batch holds one, so this also bounds how many "
      "requests one batch can gather",
      cxxopts::value<int>()->default_value("64"))(
      "batch-texts", "a batch closes at this many texts",
      cxxopts::value<int>()->default_value(std::to_string(BatchLimits().max_texts)))(
      "batch-tokens", "... or this many tokens",
      cxxopts::value<int>()->default_value(std::to_string(BatchLimits().max_tokens)))(
      "batch-wait-ms",
      "... or when its first request has waited this long (0: a batch is what is queued when the last pass ends)",
      cxxopts::value<int>()->default_value("0"))(
      "no-batching", "run each request's texts as a pass of their own, in the request's thread (for comparison)")(
      "queue", "embedding requests waiting at once; one more is answered 503",
      cxxopts::value<int>()->default_value("1024"))("max-body", "largest request body in bytes (413 past it)",
                                                    cxxopts::value<int>()->default_value("1048576"))(
      "max-texts", "texts in one /v1/embeddings request", cxxopts::value<int>()->default_value("256"))(
      "max-tokens", "tokens in one text (a longer one is refused, or cut with \"truncate\": true)",
      cxxopts::value<int>()->default_value("512"))(
      "timeout",
      "seconds a client may take to send a whole request (line, headers and body), and again to take its answer",
      cxxopts::value<int>()->default_value("10"));
  add_compute_type_option(o);
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  refuse_stray_arguments(args, "--model WORD");
  const std::string host = args["host"].as<std::string>();
  const int port = int_option(args, "port", 0, 65535);
  const int http_threads = int_option(args, "http-threads", 1, 4096);
  BatchLimits limits;
  limits.max_texts = int_option(args, "batch-texts", 1, 1 << 20);
  limits.max_tokens = int_option(args, "batch-tokens", 1, 1 << 30);
  limits.wait = std::chrono::milliseconds(int_option(args, "batch-wait-ms", 0, 10000));
  Settings settings;
  settings.batching = !args.count("no-batching");
  settings.queue = int_option(args, "queue", 1, 1 << 20);
  const int max_body = int_option(args, "max-body", 1, 1 << 30);
  settings.max_texts = int_option(args, "max-texts", 1, 1 << 20);
  settings.max_tokens = int_option(args, "max-tokens", 1, kMaxCount);
  const int timeout = int_option(args, "timeout", 1, 3600);
  set_num_threads(threads_option(args));
  const ComputeType compute_type = compute_type_option(args);  // a wrong value fails before the model loads
  const std::string dir = model_dir(args);
  Pipeline pipeline(dir);
  pipeline.set_compute_type(compute_type);
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  settings.model_name = base.substr(base.find_last_of('/') + 1);
  if (!pipeline.config().name.empty()) settings.model_name = pipeline.config().name;
  settings.view_name = args.count("model") ? dir : "the default model";
  Service service(pipeline, settings, limits);
  const std::string page = service.page();

  serve::Server server;
  // The HTTP threads start here, before "listening" is said: one that cannot start is an error now.
  auto pool = std::make_unique<serve::ThreadPool>(http_threads);
  server.new_task_queue = [&pool] { return pool.release(); };
  server.set_payload_max_length(size_t(max_body));
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on the same
  // port starts without complaint and the kernel shares the connections between the two.
  socket_t listening = INVALID_SOCKET;
  server.set_socket_options([&listening](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening = sock;  // the socket being bound (the last one tried is the one that listens)
  });
  // A slow or silent client gives up its thread after `timeout` seconds instead of holding it.
  server.set_request_timeout(std::chrono::seconds(timeout));
  // An answer goes out in two writes (headers, body); with Nagle's algorithm the second waits for the
  // client's delayed ACK of the first, tens of milliseconds on loopback.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(1000);
  server.set_keep_alive_timeout(2);  // an idle connection holds a thread (and delays a stop) this long

  install_routes(server, service, settings, page, max_body);
  std::atomic<long> answered{0};
  // The time from routing to the answer written. A request httplib refuses before routing (one it
  // cannot parse) has no start: "- ms".
  server.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    char ms[32] = "-";
    if (t_request_start != Clock::time_point{})
      std::snprintf(ms, sizeof ms, "%.1f",
                    std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count());
    std::fprintf(stderr, "%s %s %d %s ms\n", log_path(req.method).c_str(), log_path(req.path).c_str(), res.status, ms);
    t_request_start = Clock::time_point{};
    ++answered;
  });

  const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    const int err = bind_errno(host, port);
    const std::string where = host + ":" + std::to_string(port);
    if (err == EADDRINUSE)
      throw InputError(where,
                       "the port is in use (another program listens there: stop it, or choose another "
                       "--port; --port 0 takes any free one)");
    throw InputError(where, std::string("cannot listen there (") + (err ? std::strerror(err) : "unknown reason") +
                                "; --host takes an address of this machine, such as 127.0.0.1)");
  }

  // httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
  // library): when more clients connect at once than the accepting thread has taken, the kernel
  // drops their handshakes and they try again after 1, 2, 4, ... s. Listening again on the same
  // socket sets a backlog of the system's largest (net.core.somaxconn).
  if (listening != INVALID_SOCKET) ::listen(listening, SOMAXCONN);

  // Stop on SIGTERM and SIGINT: the handler wakes the watcher through the pipe.
  if (::pipe(g_stop_pipe) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  for (int sig : {SIGTERM, SIGINT}) {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client gone away is an error on its socket, not the server's end
  std::thread watcher([&server] {
    char byte;
    while (::read(g_stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    server.stop();
  });

  std::fprintf(stderr, "ordo serve: listening on http://%s:%d/ (model %s; %s)\n", host.c_str(), bound,
               settings.view_name.c_str(),
               settings.batching ? ("batches of up to " + std::to_string(limits.max_texts) + " texts, " +
                                    std::to_string(limits.max_tokens) + " tokens, " +
                                    std::to_string(limits.wait.count() / 1000) + " ms wait")
                                       .c_str()
                                 : "no batching");
  std::fflush(stderr);
  server.listen_after_bind();  // returns once stop() has run and the requests in flight are answered
  if (g_stop_signal == 0) {    // it ended on its own: wake the watcher
    const char byte = 0;
    const ssize_t n = ::write(g_stop_pipe[1], &byte, 1);
    (void)n;
  }
  watcher.join();
  const std::string batches = service.finish();
  std::fprintf(stderr, "ordo serve: stopped%s after %ld requests%s\n",
               g_stop_signal == SIGTERM  ? " (SIGTERM)"
               : g_stop_signal == SIGINT ? " (SIGINT)"
                                         : "",
               answered.load(), batches.c_str());
  return 0;
}

}  // namespace ordo::serve
