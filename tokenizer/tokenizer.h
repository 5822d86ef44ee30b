// ordo: text to pieces and ids, through a sentencepiece model. Knows no matrices.
//
//   ordo::Tokenizer tok = ordo::Tokenizer::load("models/default/tokenizer.model");
//   ordo::Tokenization t = tok.encode("the cat sat on the mat");
//   // t.pieces = {"▁the", "▁cat", ...}, t.ids = {...}
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ordo {

struct Tokenization {
  std::vector<std::string> pieces;
  std::vector<int32_t> ids;
};

class Tokenizer {
 public:
  // Throws InputError naming the file if it is missing or not a sentencepiece model.
  static Tokenizer load(const std::string& path);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Invalid UTF-8 is an InputError ("<where>: ...") rather than silently replaced.
  Tokenization encode(std::string_view text, const std::string& where = "input") const;

  int size() const;    // number of pieces
  int bos_id() const;  // -1 when the model has none
  int eos_id() const;
  // The control piece `<mask>` a masked language model was trained to fill: its id, or -1 when
  // the model has none. Ordinary text never produces it (encode("<mask>") gives ▁ < ma s k >).
  int mask_id() const;
  // Pieces are printed as the tokenizer stores them: byte-fallback pieces as "<0xC3>", control
  // pieces as "<s>", "</s>", "<mask>". An id outside [0, size()) gives "<?>".
  std::string piece(int id) const;

  // Text in which each literal "<mask>" stands for one masked piece (as `ordo fill` reads it):
  // the text is split at the markers, each segment (spaces at its ends trimmed) is encoded on its
  // own and the mask id goes between. A segment that follows a marker with no space between
  // ("the <mask>.") is encoded without sentencepiece's leading "▁" piece, as the same characters
  // are inside a sentence ("mat." is ▁mat .), so "the <mask>." gives ▁the <mask> . and
  // "the <mask> ." gives ▁the <mask> ▁ . (as "the mat ." would). `positions`, if given, receives
  // the index of each mask in the result. Throws InputError(where) for invalid UTF-8, and
  // InputError(path()) when the text holds a marker but the tokenizer has no <mask> piece.
  Tokenization encode_masked(std::string_view text, const std::string& where = "input",
                             std::vector<int>* positions = nullptr) const;
  const std::string& path() const { return path_; }

 private:
  Tokenizer() = default;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
};

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text, size_t* bad_offset = nullptr);

}  // namespace ordo
