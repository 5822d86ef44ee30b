// ordo serve's endpoints (service.h): the body of each request read as JSON, answered with the JSON
// of the matching command's --json.
#include "tools/serve/service.h"

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
#include "view_page.h"  // ordo::teach::view_page(), made from tools/teach/view/ by embed.cmake

namespace ordo::serve {

using namespace ordo::cli;  // what the commands share and their JSON (cli.h, results_json.h)

namespace {

using Clock = std::chrono::steady_clock;

HttpError invalid(const std::string& message) {  // well-formed JSON, but a field that cannot be used
  return {422, "invalid_request_error", message};
}

// ---- the fields of a request body --------------------------------------------------------------------

nlohmann::json body_of(const std::string& body) {
  nlohmann::json j;
  size_t bad = 0;
  if (!valid_utf8(body, &bad))  // the byte named as the library names one in a text
    throw HttpError{400, "invalid_request_error",
                    "the body is not UTF-8, as JSON must be: invalid UTF-8 at byte " + std::to_string(bad)};
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

}  // namespace

Tokenization Service::tokens(const std::string& text, const std::string& where, bool masked,
                             std::optional<bool> truncate) const {
  TextLimits limits;
  limits.max_tokens = settings_.max_tokens;
  limits.truncate = truncate.value_or(false);
  limits.max_tokens_name = "--max-tokens ";
  limits.truncate_hint = truncate ? "set \"truncate\": true" : "";
  return pipeline_.prepare(text, where, limits, nullptr, 0, masked);
}

// POST /v1/embeddings: {"input": str | [str], "model"?, "encoding_format"?: "float" | "base64",
// "truncate"?: false (true: a text past --max-tokens is cut to it, as text-embeddings-inference's)}.
// Each text's vector is the mean of its final hidden states, v = (1/L) Σ_t h_t, as `ordo encode`
// computes by default (not normalized), or what a sentence-transformers model's modules say (its
// pooling, and unit length where it has Normalize).
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
  // OpenAI's "dimensions" truncates a model trained for it (Matryoshka); the first k values of a mean
  // of hidden states are not such a vector, so it is refused rather than ignored.
  if (body.contains("dimensions"))
    throw invalid(
        "\"dimensions\" is not supported: a vector has all of the model's values (d_model, or its Dense module's "
        "out_features), and a prefix of "
        "them is not an embedding of its own");
  const std::string format = optional_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw invalid("\"encoding_format\" must be \"float\" or \"base64\", got \"" + format + "\"");
  const bool truncate = bool_field(body, "truncate", false);

  std::vector<Tokenization> all;
  size_t used = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string where = "\"input\"[" + std::to_string(i) + "]";
    all.push_back(tokens(texts[i], where, false, truncate));
    // A text of no tokens has no mean: OpenAI refuses empty input too.
    if (all.back().ids.empty()) throw invalid(where + ": " + kNoTokens);
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
      for (Encoded& e : pipeline_.encode(std::move(all), pipeline_.model_pooling(), pipeline_.model_normalize()))
        vectors.push_back(std::move(e.values));
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
  const int k = std::min(top, pipeline_.config().vocab_size);
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
  const Config& c = pipeline_.config();
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
// attention weights (S, S), each piece's value v and the head's output A·v (S, dh); for rope q and k
// before their rotation too, for alibi the bias apart; "parts": the scores split into content and
// position (`ordo attention --parts`) for layer 0 of a model that adds its positions to the input, with
// positions, else null (HeadInsides in tools/cli/results_json.h). Row = query piece, column = key piece.
ojson Service::attention(const nlohmann::json& body) {
  const Config& c = pipeline_.config();
  const std::string text = string_field(body, "text");
  const int layer = int_field(body, "layer", 0, 0, c.n_layers - 1), head = int_field(body, "head", 0, 0, c.n_heads - 1);
  const bool positions = bool_field(body, "positions", true);
  const Tokenization t = tokens(text, "\"text\"", pipeline_.has_head() && pipeline_.mask_id() >= 0);
  if (t.ids.empty()) throw invalid("\"text\" has no tokens");
  HeadInsides inside([&](int l, int h) { return l == layer && h == head; });
  EncodeOptions options;
  options.positions = positions;
  options.observe = [&](const Stage& s) { inside.observe(s); };
  std::lock_guard<std::mutex> lock(teach_);
  pipeline_.observe(t.ids, options);
  ojson j = {{"text", text},       {"layer", layer}, {"head", head}, {"positions", pipeline_.sees_order(positions)},
             {"pieces", t.pieces}, {"ids", t.ids}};
  j.update(inside.json(layer, head));  // every pass reaches every head
  // Layer 0 of a model that adds its positions to the input: the scores split by where q and k come
  // from, against a second pass without positions (null elsewhere).
  j["parts"] = nullptr;
  if (positions && layer == 0 && !c.norm_first && added_to_input(c.positional_encoding)) {
    HeadInsides content([&](int l, int h) { return l == layer && h == head; });
    options.positions = false;
    options.observe = [&](const Stage& s) { content.observe(s); };
    pipeline_.observe(t.ids, options);
    j["parts"] = HeadInsides::parts_json(c, layer, head, inside, content);
  }
  return j;
}

// POST /view {"a", "b"?}: the JSON `ordo view` puts in its page, for one text or two, with "inside"
// null: the live page asks POST /attention for the head it shows.
nlohmann::json Service::view(const nlohmann::json& body) {
  std::vector<std::string> texts = {string_field(body, "a")};
  if (auto b = optional_string(body, "b"); b && !b->empty()) texts.push_back(*b);
  std::vector<Tokenization> t;
  for (size_t i = 0; i < texts.size(); ++i) t.push_back(view_tokens(pipeline_, texts[i], i ? "\"b\"" : "\"a\""));
  std::lock_guard<std::mutex> lock(teach_);
  return view_json(pipeline_, texts, t, settings_.view_name, false);  // the page asks /attention for 2b
}

// GET /: the page of `ordo view` for the walkthrough's two sentences, marked live: the page then
// shows its text boxes and asks /view (and /attention) again as the reader types.
std::string Service::page() {
  nlohmann::json data = view({{"a", "the cat sat on the mat"}, {"b", "the mat sat on the cat"}});
  data["live"] = true;
  const std::string json = json_for_html(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string page = teach::view_page();
  page.replace(page.find("@ORDO_VIEW_DATA@"), std::strlen("@ORDO_VIEW_DATA@"), json);
  // The file page may load nothing; the live one asks its own server, and only it.
  const std::string csp = "default-src 'none';";
  page.replace(page.find(csp), csp.size(), csp + " connect-src 'self';");
  return page;
}

// Each endpoint by its path.
Answer answer(Service& service, const std::string& path, const std::string& body) {
  using Endpoint = std::function<ojson(Service&, const nlohmann::json&)>;
  static const std::map<std::string, Endpoint> kEndpoints = {
      {"/v1/embeddings", &Service::embeddings},
      {"/tokenize", &Service::tokenize},
      {"/fill", &Service::fill},
      {"/score", &Service::score},
      {"/compare", &Service::compare},
      {"/trace", &Service::trace},
      {"/attention", &Service::attention},
      {"/view", [](Service& s, const nlohmann::json& b) { return ojson(s.view(b)); }}};
  try {
    const auto e = kEndpoints.find(path);
    if (e == kEndpoints.end()) throw HttpError{404, "not_found", "no endpoint " + path + " (see docs/serve.md)"};
    return {200, e->second(service, body_of(body)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  } catch (const HttpError& e) {
    return {e.status, error_json(e)};
  } catch (const InputError& e) {  // the text or a value in it: named in the message
    return {422, error_json(invalid(e.what()))};
  } catch (const std::bad_alloc&) {
    return {503, error_json({503, "server_error", "out of memory for this request"})};
  }
}

std::string error_json(const HttpError& e) {
  return ojson{{"error", {{"message", one_line(e.message)}, {"type", e.type}}}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ordo::serve
