// ordo in the browser: the answers of `ordo serve` (tools/serve/service.cpp) without HTTP, for the
// page that runs itself (`ordo view --standalone`). The page writes the model's files into the
// module's memory file system and calls
//   ordo_web_load(dir, name)   loads the model: "" or the error's one line
//   ordo_web_answer(path, body)  POST `path` with JSON `body`: the answer's JSON, its status in
//                              ordo_web_status() (200, or the server's error status)
// Both return a string the module owns until the next call.
#include <emscripten/emscripten.h>

#include <exception>
#include <memory>
#include <string>

#include <ordo/ordo.h>

#include "tools/serve/service.h"

namespace {

std::unique_ptr<ordo::Pipeline> pipeline;
std::unique_ptr<ordo::serve::Service> service;
std::string last;
int status = 200;

}  // namespace

extern "C" {

// The thread pool (engine/kernels/parallel.cpp) asks which core a thread runs on; emscripten's C library
// has no sched_getcpu. The page runs one thread: core 0.
int sched_getcpu(void) {
  return 0;
}

EMSCRIPTEN_KEEPALIVE const char* ordo_web_load(const char* dir, const char* name) {
  try {
    service.reset();
    pipeline = std::make_unique<ordo::Pipeline>(dir);
    ordo::serve::Settings settings;
    settings.batching = false;  // one page, one question at a time
    settings.model_name = name;
    settings.view_name = name;
    service = std::make_unique<ordo::serve::Service>(*pipeline, settings, ordo::serve::BatchLimits{});
    last.clear();
  } catch (const std::exception& e) {
    pipeline.reset();
    last = e.what();
    if (last.empty()) last = "the model did not load";
  }
  return last.c_str();
}

EMSCRIPTEN_KEEPALIVE const char* ordo_web_answer(const char* path, const char* body) {
  if (!service) {
    status = 503;
    last = ordo::serve::error_json({503, "server_error", "no model is loaded"});
    return last.c_str();
  }
  ordo::serve::Answer a = ordo::serve::answer(*service, path, body);
  status = a.status;
  last = std::move(a.json);
  return last.c_str();
}

EMSCRIPTEN_KEEPALIVE int ordo_web_status() {
  return status;
}

}  // extern "C"
