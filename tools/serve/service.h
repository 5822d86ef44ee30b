// ordo serve's answers, apart from HTTP: a request's path and body in, its status and JSON out.
// serve.cpp puts them on the wire with cpp-httplib; fuzz/fuzz_serve.cpp calls them directly.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include <ordo/ordo.h>

#include "tools/cli/cli.h"
#include "tools/serve/batcher.h"

namespace ordo::serve {

using ojson = nlohmann::ordered_json;

// A request the server refuses: its status, an error type in OpenAI's manner and one line that says why.
struct HttpError {
  int status;
  std::string type;
  std::string message;
};

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
  Service(Pipeline& pipeline, Settings settings, const BatchLimits& limits)
      : pipeline_(pipeline), settings_(std::move(settings)) {
    if (settings_.batching) batcher_ = std::make_unique<Batcher>(pipeline_, limits);
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
    const std::string done = "; " + cli::count(long(batcher_->passes()), "pass", "passes") + " held " +
                             cli::count(long(batcher_->texts()), "text", "texts");
    batcher_.reset();
    return done;
  }

 private:
  // A text's tokens by the library's rules (Pipeline::prepare), refused by name (422) past the
  // server's limit on one text, or cut to it with *truncate (an endpoint that offers truncation
  // passes its request's "truncate"; the others nullopt).
  Tokenization tokens(const std::string& text, const std::string& where, bool masked = false,
                      std::optional<bool> truncate = std::nullopt) const;

  Pipeline& pipeline_;
  Settings settings_;
  std::unique_ptr<Batcher> batcher_;
  std::atomic<int> pending_{0};  // /v1/embeddings requests admitted and not yet answered
  // The teaching endpoints run one at a time: each is a few passes over one text, and their
  // answers are for a person at a page, not for throughput.
  std::mutex teach_;
};

// The answer to POST `path` with `body`: 200 and the endpoint's JSON, or an error status and
// {"error": {"message", "type"}}; any body, any path, never an exception (but out of memory).
struct Answer {
  int status = 200;
  std::string json;
};
Answer answer(Service& service, const std::string& path, const std::string& body);
// {"error": {"message", "type"}} of e, one line.
std::string error_json(const HttpError& e);

}  // namespace ordo::serve
