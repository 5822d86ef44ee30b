// Fuzzes tokenizer.model: any bytes, as the protobuf sentencepiece reads (ModelProto). ordo's
// checks run first (framing, piece lengths, normalization tries); whatever they pass goes to
// sentencepiece, and a model that loads must tokenize a text. Success or InputError, nothing else.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ordo::Tokenizer t = ordo::Tokenizer::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const ordo::Tokenization out = t.encode("the cat sat on the mat, caf\xc3\xa9 \xe7\x8c\xab 42");
    if (out.ids.size() != out.pieces.size()) std::abort();
    for (int32_t id : out.ids)
      if (id < 0 || id >= t.size()) std::abort();
  } catch (const ordo::InputError&) {
  }
  return 0;
}
