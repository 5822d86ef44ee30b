// Fuzzes loading a whole model directory, then one encode.
// Input: [u32 n][n bytes config.json][u32 m][m bytes model.safetensors][rest: tokenizer.model],
// lengths little-endian; an empty rest means the fixed tiny tokenizer (tests/corpus/tiny.model).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "common/regular_file.h"

namespace {

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
}

// Takes a u32-length-prefixed part off the front of [p, end); the whole rest if the length lies.
std::pair<const uint8_t*, size_t> take(const uint8_t*& p, const uint8_t* end) {
  uint32_t n = 0;
  if (end - p >= 4) {
    std::memcpy(&n, p, 4);
    p += 4;
  }
  const size_t len = std::min<size_t>(n, size_t(end - p));
  const auto part = std::make_pair(p, len);
  p += len;
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string tiny =
      ordo::read_regular_file(ORDO_FUZZ_TOKENIZER, uint64_t(1) << 30, "a sentencepiece model");
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/ordo-fuzz-model-XXXXXX";
    if (!::mkdtemp(t.data())) std::abort();
    return t;
  }();
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  const auto config = take(p, end);
  const auto weights = take(p, end);
  write_file(dir + "/config.json", config.first, config.second);
  write_file(dir + "/model.safetensors", weights.first, weights.second);
  if (p == end)
    write_file(dir + "/tokenizer.model", reinterpret_cast<const uint8_t*>(tiny.data()), tiny.size());
  else
    write_file(dir + "/tokenizer.model", p, size_t(end - p));
  try {
    ordo::Pipeline pipeline(dir);
    const auto out = pipeline.encode({"the cat sat on the mat"}, ordo::Pooling::Mean);
    if (out.size() != 1 || out[0].values.size() != size_t(pipeline.config().d_model)) std::abort();
  } catch (const ordo::InputError&) {
  }
  return 0;
}
