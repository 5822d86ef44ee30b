// ordo serve: a local HTTP server, one more client of the library API (<ordo/ordo.h>) beside the
// command line. It answers POST /v1/embeddings in OpenAI's shape, with the texts of concurrent
// requests run in one forward pass (batcher.h); ordo's own endpoints (/tokenize, /fill, /score,
// /compare, /trace, /attention, /view) answer with the JSON of the matching command's --json,
// built by the same functions (tools/cli/results_json.h); GET / is the page of `ordo view`, live.
//
// HTTP is cpp-httplib (Debian's libcpp-httplib-dev): maintained, packaged by Debian, with a thread
// pool and per-connection read and write timeouts built in, and nothing else to depend on.
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

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/cli/compare.h"
#include "tools/cli/json_out.h"
#include "tools/cli/results_json.h"
#include "tools/serve/batcher.h"
#include "view_page.h"  // ordo::teach::kViewPage, made from tools/teach/view/ by embed.cmake

namespace ordo::cli {

namespace {

using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// A request the server refuses: its status, an error type in OpenAI's manner and one line that says why.
struct HttpError {
  int status;
  std::string type;
  std::string message;
};

HttpError invalid(const std::string& message) {  // well-formed JSON, but a field that cannot be used
  return {422, "invalid_request_error", message};
}

template <class Json>
void send_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  // With a charset, httplib leaves the body uncompressed (it compresses plain "application/json"):
  // brotli at its default quality takes about 100 ms for the 56 KB of a /view answer, twenty times
  // the time to compute it, to save nothing on loopback.
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, const HttpError& e) {
  send_json(res, e.status, ojson{{"error", {{"message", one_line(e.message)}, {"type", e.type}}}});
}

// ---- the fields of a request body --------------------------------------------------------------------

nlohmann::json body_of(const std::string& body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers past a double (1e999)
    throw HttpError{400, "invalid_request_error", std::string("the body is not JSON: ") + e.what()};
  }
  if (!j.is_object()) throw invalid("the body must be a JSON object");
  return j;
}

std::string quoted(const char* name) {
  return std::string("\"") + name + "\"";
}

std::string string_field(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) throw invalid(quoted(name) + " is missing: it takes a string");
  if (!j[name].is_string()) throw invalid(quoted(name) + " must be a string");
  return j[name].get<std::string>();
}

std::optional<std::string> optional_string(const nlohmann::json& j, const char* name) {
  if (!j.contains(name) || j[name].is_null()) return std::nullopt;
  return string_field(j, name);
}

bool bool_field(const nlohmann::json& j, const char* name, bool fallback) {
  if (!j.contains(name)) return fallback;
  if (!j[name].is_boolean()) throw invalid(quoted(name) + " must be true or false");
  return j[name].get<bool>();
}

int int_field(const nlohmann::json& j, const char* name, int fallback, int lo, int hi) {
  if (!j.contains(name)) return fallback;
  const nlohmann::json& v = j[name];
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw invalid(quoted(name) + " must be an integer in " + std::to_string(lo) + " .. " + std::to_string(hi));
  return v.get<int>();
}

// Little-endian float32 bytes in base64 (RFC 4648), OpenAI's encoding_format "base64".
std::string base64_floats(const std::vector<float>& v) {
  static const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (float f : v) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int b = 0; b < 4; ++b) bytes += char((u >> (8 * b)) & 0xFF);
  }
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = 0;
    for (size_t k = 0; k < 3; ++k) w = (w << 8) | (k < n ? uint8_t(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kDigits[(w >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// ---- the server ------------------------------------------------------------------------------------

struct Settings {
  std::string model_name;  // what /v1/embeddings answers in "model": the model directory's last part
  std::string view_name;   // what the page calls the model, as `ordo view` does
  bool batching = true;
  int queue = 1024;      // requests admitted to /v1/embeddings at once; more get 503
  int max_texts = 256;   // texts in one /v1/embeddings request
  int max_tokens = 512;  // tokens in one text
};

class Service {
 public:
  Service(Pipeline& pipeline, Settings settings, const serve::BatchLimits& limits)
      : pipeline_(pipeline), settings_(std::move(settings)) {
    if (settings_.batching) batcher_ = std::make_unique<serve::Batcher>(pipeline_, limits);
  }

  ojson embeddings(const nlohmann::json& body);
  ojson tokenize(const nlohmann::json& body);
  ojson fill(const nlohmann::json& body);
  ojson score(const nlohmann::json& body);
  ojson compare(const nlohmann::json& body);
  ojson trace(const nlohmann::json& body);
  ojson attention(const nlohmann::json& body);
  nlohmann::json view(const nlohmann::json& body);
  std::string page();
  const Settings& settings() const { return settings_; }

  // Stops the batcher (after the last request has been answered) and says what it did:
  // "; 812 passes held 5000 texts", or "" without batching.
  std::string finish() {
    if (!batcher_) return "";
    const std::string done = "; " + count(long(batcher_->passes()), "pass", "passes") + " held " +
                             count(long(batcher_->texts()), "text", "texts");
    batcher_.reset();
    return done;
  }

 private:
  // A text's tokens, refused by name (422) past the server's limit on one text.
  Tokenization tokens(const std::string& text, const std::string& where, bool masked = false) const;

  Pipeline& pipeline_;
  Settings settings_;
  std::unique_ptr<serve::Batcher> batcher_;
  std::atomic<int> pending_{0};  // /v1/embeddings requests admitted and not yet answered
  // The teaching endpoints run one at a time: each is a few passes over one text, and their
  // answers are for a person at a page, not for throughput.
  std::mutex teach_;
};

Tokenization Service::tokens(const std::string& text, const std::string& where, bool masked) const {
  Tokenization t = masked ? pipeline_.tokenize_masked(text, where) : pipeline_.tokenize(text, where);
  const int limit = std::min(settings_.max_tokens, pipeline_.max_tokens());
  if (int(t.ids.size()) > limit)
    throw invalid(where + " has " + std::to_string(t.ids.size()) + " tokens, more than the " + std::to_string(limit) +
                  " a text may have here (" +
                  (limit == settings_.max_tokens ? "ordo serve --max-tokens" : pipeline_.max_tokens_reason()) + ")");
  return t;
}

// POST /v1/embeddings: {"input": str | [str], "model"?, "encoding_format"?: "float" | "base64"}.
// Each text's vector is the mean of its final hidden states, v = (1/L) Σ_t h_t, as `ordo encode`
// computes by default (not normalized).
ojson Service::embeddings(const nlohmann::json& body) {
  if (!body.contains("input")) throw invalid("\"input\" is missing: it takes a string or an array of strings");
  const nlohmann::json& input = body["input"];
  std::vector<std::string> texts;
  if (input.is_string()) {
    texts.push_back(input.get<std::string>());
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) {
      if (!input[i].is_string()) throw invalid("\"input\"[" + std::to_string(i) + "] must be a string");
      texts.push_back(input[i].get<std::string>());
    }
  } else {
    throw invalid("\"input\" must be a string or an array of strings");
  }
  if (texts.empty()) throw invalid("\"input\" is an empty array: it takes at least one text");
  if (int(texts.size()) > settings_.max_texts)
    throw invalid("\"input\" has " + std::to_string(texts.size()) + " texts, more than the " +
                  std::to_string(settings_.max_texts) + " a request may have (ordo serve --max-texts)");
  if (body.contains("model") && !body["model"].is_string()) throw invalid("\"model\" must be a string");
  const std::string format = optional_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw invalid("\"encoding_format\" must be \"float\" or \"base64\", got \"" + format + "\"");

  std::vector<Tokenization> all;
  size_t used = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string where = "\"input\"[" + std::to_string(i) + "]";
    all.push_back(tokens(texts[i], where));
    // A text of no tokens has no mean: OpenAI refuses empty input too.
    if (all.back().ids.empty()) throw invalid(where + " has no tokens, so it has no vector");
    used += all.back().ids.size();
  }

  // Admission: a bounded number of requests wait, so an overloaded server says so at once
  // instead of letting every answer grow late.
  if (++pending_ > settings_.queue) {
    --pending_;
    throw HttpError{503, "overloaded",
                    "the server is busy: " + std::to_string(settings_.queue) +
                        " requests are already waiting (ordo serve --queue); try again shortly"};
  }
  std::vector<std::vector<float>> vectors;
  try {
    if (batcher_) {
      vectors = batcher_->submit(std::move(all)).get();
    } else {
      for (Encoded& e : pipeline_.encode(std::move(all), Pooling::Mean)) vectors.push_back(std::move(e.values));
    }
  } catch (...) {
    --pending_;
    throw;
  }
  --pending_;

  ojson data = ojson::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", format == "base64" ? ojson(base64_floats(vectors[i]))
                                                     : json_floats<ojson>(vectors[i].data(), vectors[i].size())}});
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", settings_.model_name},
          {"usage", {{"prompt_tokens", used}, {"total_tokens", used}}}};
}

// POST /tokenize {"text"}: `ordo tokenize --json` of that text.
ojson Service::tokenize(const nlohmann::json& body) {
  const std::string text = string_field(body, "text");
  std::vector<Span> spans;
  const Tokenization t = pipeline_.tokenize(text, "\"text\"", &spans);
  return tokenize_json(text, t, spans, pipeline_.unknown_pieces(t));
}

// POST /fill {"text", "top"?: 5, "positions"?: true, "words"?: false, "logits"?: false}: `ordo fill --json`.
ojson Service::fill(const nlohmann::json& body) {
  const std::string text = string_field(body, "text");
  const int top = int_field(body, "top", 5, 1, kMaxCount);
  const bool positions = bool_field(body, "positions", true), words = bool_field(body, "words", false);
  const bool logits = bool_field(body, "logits", false);
  pipeline_.require_head();
  tokens(text, "\"text\"", true);
  std::lock_guard<std::mutex> lock(teach_);
  const int k = std::min(top, pipeline_.model().config().vocab_size);
  return fill_json(text, pipeline_.fill(text, k, positions, "\"text\"", words), logits);
}

// POST /score {"text", "positions"?: true}: `ordo score --json` of that text.
ojson Service::score(const nlohmann::json& body) {
  const std::string text = string_field(body, "text");
  const bool positions = bool_field(body, "positions", true);
  pipeline_.require_head();
  Tokenization t = tokens(text, "\"text\"");
  // Scoring S pieces costs S passes of S pieces: the command's own limit holds here too.
  if (t.ids.size() > size_t(kScoreMaxPieces))
    throw invalid("\"text\" has " + std::to_string(t.ids.size()) + " pieces, more than the " +
                  std::to_string(kScoreMaxPieces) + " ordo score scores (the cost grows with S^3)");
  std::lock_guard<std::mutex> lock(teach_);
  return score_json(text, pipeline_.score({std::move(t)}, positions)[0]);
}

// POST /compare {"a", "b"}: `ordo compare --json` of the two texts.
ojson Service::compare(const nlohmann::json& body) {
  const std::string a = string_field(body, "a"), b = string_field(body, "b");
  const Tokenization ta = tokens(a, "\"a\""), tb = tokens(b, "\"b\"");
  std::lock_guard<std::mutex> lock(teach_);
  return compare_json(a, b, ta, tb, compare_texts(pipeline_, ta, tb));
}

// POST /trace {"text", "positions"?: true, "inside"?: [layer, head], "top"?: 3, "reference"?: false}:
// `ordo trace --json` (with --inside LAYER,HEAD when "inside" is given).
ojson Service::trace(const nlohmann::json& body) {
  const Config& c = pipeline_.model().config();
  TraceRequest r;
  r.text = string_field(body, "text");
  r.model_name = settings_.view_name;
  r.positions = bool_field(body, "positions", true);
  r.reference = bool_field(body, "reference", false);
  r.top = int_field(body, "top", 3, 0, 1000);
  if (body.contains("inside") && !body["inside"].is_null()) {
    const nlohmann::json& in = body["inside"];
    const bool ok = in.is_array() && in.size() == 2 && in[0].is_number_integer() && in[1].is_number_integer() &&
                    in[0].get<long long>() >= 0 && in[0].get<long long>() < c.n_layers && in[1].get<long long>() >= 0 &&
                    in[1].get<long long>() < c.n_heads;
    if (!ok)
      throw invalid("\"inside\" must be [layer, head] with a layer in [0, " + std::to_string(c.n_layers) +
                    ") and a head in [0, " + std::to_string(c.n_heads) + ")");
    r.inside_layer = in[0].get<int>(), r.inside_head = in[1].get<int>();
  }
  const Tokenization t = tokens(r.text, "\"text\"");
  if (t.ids.empty()) throw invalid("\"text\" has no tokens to trace");
  std::lock_guard<std::mutex> lock(teach_);
  return trace_json(pipeline_, r, t);
}

// POST /attention {"text", "layer"?: 0, "head"?: 0, "positions"?: true}: one head from the inside,
// the numbers of `ordo trace --inside LAYER,HEAD`: each piece's q and k (S, dh), the scaled scores
// q·kᵀ/√dh (S, S; with ALiBi's bias added, for a model that has it) and their softmax, the
// attention weights (S, S). Row = query piece, column = key piece.
ojson Service::attention(const nlohmann::json& body) {
  const Config& c = pipeline_.model().config();
  const std::string text = string_field(body, "text");
  const int layer = int_field(body, "layer", 0, 0, c.n_layers - 1), head = int_field(body, "head", 0, 0, c.n_heads - 1);
  const bool positions = bool_field(body, "positions", true);
  const Tokenization t = tokens(text, "\"text\"", pipeline_.has_head() && pipeline_.mask_id() >= 0);
  if (t.ids.empty()) throw invalid("\"text\" has no tokens");
  ojson q, k, scores, weights;
  EncodeOptions options;
  options.positions = positions;
  options.observe = [&](const Stage& s) {
    if (s.layer != layer || s.head != head) return;
    ojson rows = ojson::array();
    for (int r = 0; r < s.rows; ++r) rows.push_back(json_floats<ojson>(s.data + size_t(r) * s.stride, size_t(s.cols)));
    if (s.kind == StageKind::HeadQuery) q = std::move(rows);
    if (s.kind == StageKind::HeadKey) k = std::move(rows);
    if (s.kind == StageKind::ScaledScores) scores = std::move(rows);
    if (s.kind == StageKind::AttentionWeights) weights = std::move(rows);
  };
  std::lock_guard<std::mutex> lock(teach_);
  pipeline_.encoder().forward({t.ids}, options);
  return {{"text", text},
          {"layer", layer},
          {"head", head},
          {"positions", pipeline_.sees_order(positions)},
          {"pieces", t.pieces},
          {"ids", t.ids},
          {"q", std::move(q)},
          {"k", std::move(k)},
          {"scaled_scores", std::move(scores)},
          {"weights", std::move(weights)}};
}

// POST /view {"a", "b"?}: the JSON `ordo view` puts in its page, for one text or two.
nlohmann::json Service::view(const nlohmann::json& body) {
  std::vector<std::string> texts = {string_field(body, "a")};
  if (auto b = optional_string(body, "b"); b && !b->empty()) texts.push_back(*b);
  std::vector<Tokenization> t;
  for (size_t i = 0; i < texts.size(); ++i) t.push_back(view_tokens(pipeline_, texts[i], i ? "\"b\"" : "\"a\""));
  std::lock_guard<std::mutex> lock(teach_);
  return view_json(pipeline_, texts, t, settings_.view_name);
}

// GET /: the page of `ordo view` for the walkthrough's two sentences, marked live: the page then
// shows its text boxes and asks /view (and /attention) again as the reader types.
std::string Service::page() {
  nlohmann::json data = view({{"a", "the cat sat on the mat"}, {"b", "the mat sat on the cat"}});
  data["live"] = true;
  const std::string json = json_for_html(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string page = teach::kViewPage;
  page.replace(page.find("@ORDO_VIEW_DATA@"), std::strlen("@ORDO_VIEW_DATA@"), json);
  // The file page may load nothing; the live one asks its own server, and only it.
  const std::string csp = "default-src 'none';";
  page.replace(page.find(csp), csp.size(), csp + " connect-src 'self';");
  return page;
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

}  // namespace

int cmd_serve(int argc, char** argv) {
  cxxopts::Options o("ordo serve",
                     "A local HTTP server: POST /v1/embeddings (OpenAI's shape; the texts of concurrent requests run "
                     "in one forward pass), ordo's own /tokenize, /fill, /score, /compare, /trace, /attention and "
                     "/view (the JSON of each command's --json), and at / the page of ordo view, live: type a "
                     "sentence and every map follows. Binds to 127.0.0.1 unless --host says otherwise; one line per "
                     "request on stderr; SIGTERM or SIGINT finishes the requests in flight, then exits 0.");
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>())(
      "threads", "the engine's threads for one pass's matrix work (0: one per core)",
      cxxopts::value<int>()->default_value("0"))("host", "address to listen on",
                                                 cxxopts::value<std::string>()->default_value("127.0.0.1"))(
      "port", "port to listen on (0: any free one, printed at start)", cxxopts::value<int>()->default_value("8080"))(
      "http-threads",
      "connections served at once; a request waiting for its batch holds one, so this also bounds how many "
      "requests one batch can gather",
      cxxopts::value<int>()->default_value("64"))("batch-texts", "a batch closes at this many texts",
                                                  cxxopts::value<int>()->default_value("64"))(
      "batch-tokens", "... or this many tokens", cxxopts::value<int>()->default_value("4096"))(
      "batch-wait-ms",
      "... or when its first request has waited this long (0: a batch is what is queued when the last pass ends)",
      cxxopts::value<int>()->default_value("0"))(
      "no-batching", "run each request's texts as a pass of their own, in the request's thread (for comparison)")(
      "queue", "embedding requests waiting at once; one more is answered 503",
      cxxopts::value<int>()->default_value("1024"))("max-body", "largest request body in bytes (413 past it)",
                                                    cxxopts::value<int>()->default_value("1048576"))(
      "max-texts", "texts in one /v1/embeddings request", cxxopts::value<int>()->default_value("256"))(
      "max-tokens", "tokens in one text", cxxopts::value<int>()->default_value("512"))(
      "timeout", "seconds a connection may take to send a request or read its answer",
      cxxopts::value<int>()->default_value("10"));
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  const std::string host = args["host"].as<std::string>();
  const int port = int_option(args, "port", 0, 65535);
  const int http_threads = int_option(args, "http-threads", 1, 4096);
  serve::BatchLimits limits;
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
  const std::string dir = model_dir(args);
  Pipeline pipeline(dir);
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  settings.model_name = base.substr(base.find_last_of('/') + 1);
  settings.view_name = args.count("model") ? dir : "the default model";
  Service service(pipeline, settings, limits);
  const std::string page = service.page();

  httplib::Server server;
  server.new_task_queue = [http_threads] { return new httplib::ThreadPool(size_t(http_threads)); };
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
  server.set_read_timeout(timeout);
  server.set_write_timeout(timeout);
  // An answer goes out in two writes (headers, body); with Nagle's algorithm the second waits for the
  // client's delayed ACK of the first, tens of milliseconds on loopback.
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(1000);
  server.set_keep_alive_timeout(2);  // an idle connection holds a thread (and delays a stop) this long

  // Each endpoint reads its body itself (a content reader): httplib, left to read it, parses a body sent
  // as application/x-www-form-urlencoded (what `curl -d` says) into form fields and refuses one past
  // 8 KiB with 413, a limit compiled into Debian's library; the body is JSON whatever the header says.
  auto endpoint = [&](auto method) {
    return [&service, method, max_body](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& read) {
      try {
        if (req.is_multipart_form_data())
          throw HttpError{415, "invalid_request_error", "the body is JSON, not multipart/form-data"};
        std::string body;
        bool too_large = false;
        read([&](const char* data, size_t n) {
          if (body.size() + n > size_t(max_body)) return !(too_large = true);
          body.append(data, n);
          return true;
        });
        if (too_large || res.status == 413) {
          res.set_header("Connection", "close");  // the rest of the body is not read
          throw HttpError{413, "request_too_large", "the body is larger than the server takes (ordo serve --max-body)"};
        }
        send_json(res, 200, (service.*method)(body_of(body)));
      } catch (const HttpError& e) {
        send_error(res, e);
      } catch (const InputError& e) {  // the text or a value in it: named in the message
        send_error(res, invalid(e.what()));
      } catch (const std::bad_alloc&) {
        send_error(res, {503, "server_error", "out of memory for this request"});
      }
    };
  };
  server.Post("/v1/embeddings", endpoint(&Service::embeddings));
  server.Post("/tokenize", endpoint(&Service::tokenize));
  server.Post("/fill", endpoint(&Service::fill));
  server.Post("/score", endpoint(&Service::score));
  server.Post("/compare", endpoint(&Service::compare));
  server.Post("/trace", endpoint(&Service::trace));
  server.Post("/attention", endpoint(&Service::attention));
  server.Post("/view", endpoint(&Service::view));
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, ojson{{"status", "ok"}, {"model", settings.model_name}, {"batching", settings.batching}});
  });
  server.Get(
      "/", [&](const httplib::Request&, httplib::Response& res) { res.set_content(page, "text/html; charset=utf-8"); });
  // What httplib answers itself (no route, a body past --max-body, a request it cannot read) gets
  // the same JSON error as the endpoints; a known path asked with another method is 405.
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an endpoint's own error
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
  server.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    t_request_start = Clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  std::atomic<long> answered{0};
  // The time from routing to the answer written. A request httplib refuses before routing (one it
  // cannot parse) has no start: "- ms".
  server.set_logger([&](const httplib::Request& req, const httplib::Response& res) {
    char ms[32] = "-";
    if (t_request_start != Clock::time_point{})
      std::snprintf(ms, sizeof ms, "%.1f",
                    std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count());
    std::fprintf(stderr, "%s %s %d %s ms\n", req.method.c_str(), req.path.c_str(), res.status, ms);
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

}  // namespace ordo::cli
