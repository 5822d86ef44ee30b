// Fuzzes ordo serve's request handling without sockets: the first byte picks the path (one of the
// eight POST endpoints, or one that does not exist) and whether /v1/embeddings batches; the rest is
// the body. Every answer must be one of the API's statuses with a JSON body, never a crash, a
// sanitizer report or an exception. HTTP itself (request lines, headers, lengths) is cpp-httplib's,
// tested by tests/serve/test_serve.py over loopback.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include <ordo/ordo.h>

#include "fuzz/serve_settings.h"
#include "tools/serve/service.h"

namespace {

ordo::serve::Service& service(bool batching) {
  static ordo::Pipeline pipeline(ORDO_FUZZ_SERVE_MODEL);
  static ordo::serve::Service batched(pipeline, ordo::fuzz::serve_settings(true), ordo::serve::BatchLimits{});
  static ordo::serve::Service alone(pipeline, ordo::fuzz::serve_settings(false), ordo::serve::BatchLimits{});
  return batching ? batched : alone;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* kPaths[] = {"/v1/embeddings", "/tokenize",  "/fill", "/score",  "/compare",
                                 "/trace",         "/attention", "/view", "/nowhere"};
  if (size == 0) return 0;
  const std::string path = kPaths[data[0] % 9];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  const ordo::serve::Answer a = ordo::serve::answer(service(data[0] & 0x80), path, body);
  switch (a.status) {
    case 200:
    case 400:
    case 404:
    case 413:
    case 422:
    case 503:
      break;
    default:
      std::abort();
  }
  const auto j = nlohmann::json::parse(a.json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || (a.status != 200 && !j.contains("error"))) std::abort();
  return 0;
}
