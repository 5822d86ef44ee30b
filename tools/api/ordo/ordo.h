// ordo: the one place where text meets the engine.
//
//   #include <ordo/ordo.h>
//   ordo::Pipeline pipeline(ordo::default_model_dir());
//   auto out = pipeline.encode({"the cat sat on the mat"}, ordo::Pooling::Mean);
//   // out[0].tokens.pieces, out[0].values: d floats
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

namespace ordo {

// The model used when none is named: $ORDO_MODEL; else models/default beside the running
// binary (a build tree); else ../share/ordo/models/default from it (an installed `ordo`); else
// `installed`, which a program built against an installed ordo gets from find_package(ordo) (with
// pkg-config: -DORDO_INSTALLED_MODEL_DIR="\"$(pkg-config --variable=modeldir ordo)\""); else the
// model directory of an installation at the prefix the library was configured with, if it exists;
// else "".
#ifndef ORDO_INSTALLED_MODEL_DIR
#define ORDO_INSTALLED_MODEL_DIR ""
#endif
std::string default_model_dir(const std::string& installed = ORDO_INSTALLED_MODEL_DIR);

// How a text's rows of hidden states (L, d) become its result:
//   Mean:  v = (1/L)·Σ_t h_t   (d)
//   First: v = h_0             (d)
//   None:  the rows themselves (L, d)
// A text of no tokens pools to zeros (Mean, First) or to no rows (None).
enum class Pooling { Mean, First, None };
std::vector<float> pool(const float* rows /* (L, d) */, int L, int d, Pooling pooling);

// The lines of a text stream, one at a time, so that input of any length is read in bounded
// memory: a UTF-8 BOM at the start and a CR before each newline are dropped, a UTF-16 BOM is an
// InputError (the whole stream is in another encoding), a read error too. A line is kept up to
// `keep` + 4 bytes (enough to finish a UTF-8 character cut at `keep`); the rest is counted and
// checked, not kept.
class LineReader {
 public:
  LineReader(std::FILE* in, std::string name, size_t keep);
  struct Line {
    std::string text;     // the line, or its first keep + 4 bytes
    uint64_t bytes = 0;   // the whole line's length, without newline and CR
    std::string where;    // "<name>: line N"
    std::string problem;  // what makes the line unusable (a NUL byte), or empty
  };
  // False at the end of the input.
  bool next(Line* line);
  const std::string& name() const { return name_; }

 private:
  bool fill();
  std::FILE* in_;
  std::string name_;
  size_t keep_;
  uint64_t number_ = 0;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
};

// The lines of a text held whole, one text each, by the rules of LineReader; a NUL byte is an
// InputError naming the line. `where`, if given, receives "<name>: line N" for each text.
std::vector<std::string> split_lines(const std::string& all, const std::string& name,
                                     std::vector<std::string>* where = nullptr);

struct Encoded {
  Tokenization tokens;
  int rows = 0;               // 1 when pooled, else the number of tokens
  std::vector<float> values;  // (rows, d)
};

class Pipeline {
 public:
  // Loads dir/config.json, dir/model.safetensors and the tokenizer the config names, and checks
  // that they fit together. Throws InputError naming the file at fault.
  explicit Pipeline(const std::string& model_dir);
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Pieces and ids of one text, with BOS/EOS when the config asks for them.
  Tokenization tokenize(std::string_view text, const std::string& where = "input") const;

  // The most tokens one text can have with this model on this machine: the model's learned
  // position table (max_positions) where it has one, and the working memory of the text's
  // forward pass (the attention scores alone are S² floats) within half of this machine's memory.
  int max_tokens() const;
  // What sets max_tokens(), for messages: "the model's max_positions 512" or
  // "this machine's memory (a text of at most 46341 tokens)".
  std::string max_tokens_reason() const;
  // t cut to its first n tokens (n ≥ 1). When the config adds EOS, the last token is EOS again,
  // so the cut text still ends the way the model expects.
  void truncate(Tokenization& t, int n) const;

  // Texts → vectors, run as one padded batch. An error in one text names it by its index: "texts[2]: ...".
  std::vector<Encoded> encode(const std::vector<std::string>& texts, Pooling pooling, bool normalize = false,
                              const EncodeOptions& options = {});
  // The same from tokenizations already made.
  std::vector<Encoded> encode(std::vector<Tokenization> tokens, Pooling pooling, bool normalize = false,
                              const EncodeOptions& options = {});

  const Model& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  Encoder& encoder() { return encoder_; }

 private:
  Model model_;
  Tokenizer tokenizer_;
  Encoder encoder_;
};

}  // namespace ordo
