// The server's settings both fuzz targets of `ordo serve` use (fuzz_serve: its endpoints' bodies;
// fuzz_http: its HTTP layer): small limits keep each execution short, and the checks against them
// are the point.
#pragma once

#include "tools/serve/service.h"

namespace ordo::fuzz {

inline serve::Settings serve_settings(bool batching) {
  serve::Settings s;
  s.batching = batching;
  s.max_texts = 16;
  s.max_tokens = 48;
  s.model_name = "default";
  s.view_name = "the default model";
  return s;
}

}  // namespace ordo::fuzz
