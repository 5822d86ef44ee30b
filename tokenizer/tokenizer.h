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

// Where a piece came from: bytes [begin, end) of the text as given, before sentencepiece
// normalizes it (so "Ａ" is 3 bytes for the piece "▁A"). A piece owns the spaces before it (the
// "▁" it starts with), except the "▁" sentencepiece puts before the first word, which has no byte;
// spaces at the text's ends belong to no piece. A character spelt by byte fallback (<0xE6> <0x97>
// <0xA5> for 日) is owned by its last byte piece; the others, and BOS and EOS, have begin == end.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

// A piece that a Hugging Face tokenizer keeps whole wherever its text stands in a text ("[SEP]",
// "</s>", "<extra_id_0>"): matched exactly, case and all, before anything is normalized; the text
// between two of them is tokenized on its own. lstrip: the whitespace before it (as Python's
// str.isspace() has it) belongs to no piece; rstrip: the whitespace after it. normalized: matched in the
// text as the tokenizer normalizes it (lowercased, ...) instead, by the WordPiece tokenizer itself
// (tokenizer.json's "normalized": true; not one of special_tokens()).
struct SpecialToken {
  std::string text;
  int32_t id = 0;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

class WordPiece;
class BytePairEncoding;

class Tokenizer {
 public:
  // Throws InputError naming the file if it is missing or not a sentencepiece model. Two file
  // names say more: vocab.txt is BERT's WordPiece vocabulary (tokenizer/wordpiece.h; [CLS] and [SEP]
  // are its BOS and EOS, [MASK] its mask, [UNK] its unknown piece), and sentencepiece.bpe.model is
  // XLM-RoBERTa's sentencepiece model, whose ids fairseq renumbered: <s> 0, <pad> 1, </s> 2, <unk> 3,
  // every other piece its sentencepiece id + 1, and <mask> after the last. A tokenizer.json whose model
  // is "BPE", or a vocab.json (merges.txt beside it), is RoBERTa's byte-level BPE (tokenizer/bpe.h; <s> and
  // </s> its BOS and EOS, <mask> its mask); another tokenizer.json is read as WordPiece's.
  static Tokenizer load(const std::string& path);
  // The same from the file's bytes; `path` names it in errors.
  static Tokenizer parse(const std::string& bytes, const std::string& path);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Invalid UTF-8 is an InputError ("<where>: ...") rather than silently replaced. `spans`, if
  // given, receives each piece's bytes in `text`. A special token's text in `text` is that token
  // (special_tokens()); where two start at one byte, the longer.
  Tokenization encode(std::string_view text, const std::string& where = "input",
                      std::vector<Span>* spans = nullptr) const;

  int size() const;    // number of pieces
  int bos_id() const;  // -1 when the model has none
  int eos_id() const;
  // The piece for text the vocabulary cannot spell (<unk>); with byte fallback, text never needs it.
  int unk_id() const;
  // The control piece `<mask>` a masked language model was trained to fill: its id, or -1 when
  // the model has none. Ordinary text never produces it (encode("<mask>") gives ▁ < ma s k >).
  int mask_id() const;
  // How a text marks a piece to fill (encode_masked): the mask piece as the tokenizer writes it,
  // "[MASK]" for WordPiece (BERT; MPNet's "<mask>", its tokenizer's mask_token), "<mask>" for sentencepiece
  // (ordo's models, XLM-R).
  const char* mask_marker() const;
  // Pieces are printed as the tokenizer stores them: byte-fallback pieces as "<0xC3>", control
  // pieces as "<s>", "</s>", "<mask>". An id outside [0, size()) gives "<?>".
  std::string piece(int id) const;

  // Text in which each literal "<mask>" (mask_marker()) stands for one masked piece (as `ordo fill` reads it):
  // the text is split at the markers, each segment (spaces at its ends trimmed) is encoded on its
  // own and the mask id goes between. A segment that follows a marker with no space between
  // ("the <mask>cat", "the <mask>.") is encoded as the inside of a word: without the "▁" that
  // sentencepiece puts before a text's first word (its add_dummy_prefix, turned off for these
  // segments), so "the <mask>cat" gives ▁the <mask> c at and "the <mask>." gives ▁the <mask> .,
  // while "the <mask> ." gives ▁the <mask> ▁ . (as "the mat ." would). `positions`, if given, receives
  // the index of each mask in the result. Throws InputError(where) for invalid UTF-8, and
  // InputError(path()) when the text holds a marker but the tokenizer has no <mask> piece.
  Tokenization encode_masked(std::string_view text, const std::string& where = "input",
                             std::vector<int>* positions = nullptr) const;
  const std::string& path() const { return path_; }

  // The special tokens encode() finds in a text, as the model's Hugging Face tokenizer does: for a
  // vocab.txt, tokenizer.json's added_tokens (else [PAD] [UNK] [CLS] [SEP] [MASK]); for XLM-R's
  // <s> <pad> </s> <unk> <mask> (lstrip), as XLMRobertaTokenizer; for T5's spiece.model </s> <unk> <pad>
  // and <extra_id_0> .. <extra_id_99> (ids from the piece count + 99 down; lstrip and rstrip), as
  // T5Tokenizer; for RoBERTa's byte-level BPE tokenizer.json's added_tokens (else tokenizer_config.json's
  // added_tokens_decoder, else <s> <pad> </s> <unk> <mask> (lstrip)), as RobertaTokenizerFast, whose lstrip and
  // rstrip take the characters of Unicode's White_Space (not U+001C .. U+001F, which str.isspace() counts).
  // ordo's own tokenizer.model has none: there
  // "<mask>" in a text is text, and only encode_masked reads it.
  const std::vector<SpecialToken>& special_tokens() const { return specials_; }
  // Forgets those whose id is not below `limit` (a model's vocab_size: T5's extra ids past it).
  void keep_special_tokens_below(int limit);
  // Which kind of tokenizer this is, as trace names it: "wordpiece" (a vocab.txt), "sentencepiece
  // with XLM-R's ids" (a sentencepiece.bpe.model), "byte-level bpe" (RoBERTa's) or "sentencepiece".
  const char* kind() const {
    return wp_ ? "wordpiece" : bpe_ ? "byte-level bpe" : fairseq_ ? "sentencepiece with XLM-R's ids" : "sentencepiece";
  }

  // At most how many bytes sentencepiece normalizes `text` (valid UTF-8) into before it splits them
  // into pieces (NFKC makes 33 bytes of the 3 of U+FDFA), found without normalizing it:
  // normalized_bytes_bound (tokenizer/charsmap.h) with this model's table. Tokenizing takes ~70 bytes
  // of memory per normalized byte, so a bound on a text's bytes is one on these. Past `stop` the
  // count stops: *prefix gets the bytes of `text` whose bound is within it.
  uint64_t normalized_bytes(std::string_view text, uint64_t stop = UINT64_MAX, size_t* prefix = nullptr) const;

 private:
  Tokenizer() = default;
  Tokenization encode_with(sentencepiece::SentencePieceProcessor& sp, std::string_view text, const std::string& where,
                           std::vector<Span>* spans) const;
  // encode() of a text in which no special token is looked for.
  Tokenization encode_text(std::string_view text, const std::string& where, std::vector<Span>* spans) const;
  // The longest special token whose text starts at text[i], or null.
  const SpecialToken* special_at(std::string_view text, size_t i) const;
  // The same model with add_dummy_prefix off, made the first time a segment needs it.
  struct Joined;
  sentencepiece::SentencePieceProcessor* inside_word() const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::shared_ptr<Joined> joined_;
  std::shared_ptr<const WordPiece> wp_;          // set for a vocab.txt, and then sp_ is null
  std::shared_ptr<const BytePairEncoding> bpe_;  // set for RoBERTa's byte-level BPE, and then sp_ is null
  bool white_space_ = false;  // lstrip and rstrip take Unicode's White_Space, as tokenizers (Rust) has it
  bool fairseq_ = false;      // XLM-R's ids (load's comment)
  int from_sp(int id) const;  // a sentencepiece id as this tokenizer numbers it
  std::string path_;
  std::string charsmap_;  // the normalizer's precompiled_charsmap ("" for none)
  std::vector<SpecialToken> specials_;
};

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text, size_t* bad_offset = nullptr);

}  // namespace ordo
