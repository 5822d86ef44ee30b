// ordo: the one place where text meets the engine.
//
//   #include <ordo/ordo.h>
//   ordo::Pipeline pipeline(ordo::default_model_dir());
//   auto out = pipeline.encode({"the cat sat on the mat"}, ordo::Pooling::Mean);
//   // out[0].tokens.pieces, out[0].values: d floats
#pragma once

#include <string>
#include <vector>

#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

namespace ordo {

// The model used when none is named: $ORDO_MODEL; else models/default beside the running
// binary (a build tree); else ../share/ordo/models/default from it (an installed `ordo`); else
// `installed`, which a program built against an installed ordo gets from find_package(ordo).
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

// The lines of a text file, one text each: a leading UTF-8 byte-order mark and the CR before
// each newline are dropped. A UTF-16 byte-order mark or a NUL byte is an InputError naming
// `name` (and the line). `where`, if given, receives "<name>: line N" for each text.
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

  // Texts → vectors, run as one padded batch.
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
