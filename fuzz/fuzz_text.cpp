// Fuzzes text input: bytes as `ordo encode --input` reads them (BOM, CRLF, NUL, invalid UTF-8),
// each line tokenized by the default model's tokenizer, cut to 64 tokens as --truncate does, then
// encoded by a small encoder (fuzz/text-model.json); and the same bytes through the streaming
// reader that keeps only the start of each line.
#include <cstdint>
#include <cstdio>
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
    // The streaming reader keeping only 16 (+4) bytes of each line sees the same lines: each kept
    // text a prefix of the whole line, with the whole line's length.
    if (size > 0) {
      std::FILE* in = ::fmemopen(const_cast<uint8_t*>(data), size, "rb");
      if (!in) std::abort();
      ordo::LineReader reader(in, "fuzz", 16);
      ordo::LineReader::Line line;
      size_t n = 0;
      while (reader.next(&line)) {
        if (n >= lines.size() || line.bytes != lines[n].size() || lines[n].compare(0, line.text.size(), line.text) != 0)
          std::abort();
        ++n;
      }
      std::fclose(in);
      if (n != lines.size()) std::abort();
    }
  } catch (const ordo::InputError&) {
  }
  return 0;
}
