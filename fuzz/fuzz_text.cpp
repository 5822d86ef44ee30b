// Fuzzes text input with the default model: bytes as `ordo encode --input` reads them (BOM, CRLF,
// NUL, invalid UTF-8), each line tokenized, cut to 64 tokens as --truncate does, then encoded.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <ordo/errors.h>
#include <ordo/ordo.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ordo::Pipeline pipeline(ORDO_FUZZ_MODEL);
  try {
    std::vector<std::string> where;
    const auto lines = ordo::split_lines(std::string(reinterpret_cast<const char*>(data), size), "fuzz", &where);
    std::vector<ordo::Tokenization> tokens;
    for (size_t i = 0; i < lines.size(); ++i) {
      tokens.push_back(pipeline.tokenize(lines[i], where[i]));
      pipeline.truncate(tokens.back(), 64);
    }
    const auto out = pipeline.encode(std::move(tokens), ordo::Pooling::None, true);
    if (out.size() != lines.size()) std::abort();
  } catch (const ordo::InputError&) {
  }
  return 0;
}
