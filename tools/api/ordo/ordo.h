// ordo: the one place where text meets the engine.
//
//   #include <ordo/ordo.h>
//   ordo::Pipeline pipeline(ordo::default_model_dir());
//   auto out = pipeline.encode({"the cat sat on the mat"}, ordo::Pooling::Mean);
//   // out[0].tokens.pieces, out[0].values: d floats
#pragma once

#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include <string>
#include <vector>

namespace ordo {

// The model used when none is named: $ORDO_MODEL; else models/default beside the running
// binary (a build tree); else ../share/ordo/models/default from it (an installed `ordo`); else
// `installed`, which a program built against an installed ordo gets from find_package(ordo).
#ifndef ORDO_INSTALLED_MODEL_DIR
#define ORDO_INSTALLED_MODEL_DIR ""
#endif
std::string default_model_dir(const std::string& installed = ORDO_INSTALLED_MODEL_DIR);

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
