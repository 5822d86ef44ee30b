// ordo: BERT's WordPiece tokenizer (vocab.txt), beside sentencepiece. Internal to tokenizer/:
// ordo::Tokenizer loads it for a file named vocab.txt and answers through it.
//
// Two steps, as BERT's reference tokenizer and Hugging Face's `tokenizers` take them:
//  1. The basic tokenizer, one character at a time: NUL, U+FFFD and control and format characters
//     are dropped, whitespace becomes a space, a CJK ideograph gets a space on each side; then, when
//     the tokenizer's config says so, accents are stripped (NFD, nonspacing marks dropped) and letters
//     lowercased. The text is split at spaces, and every punctuation character is a word of its own.
//  2. WordPiece on each word: the longest piece of the vocabulary that starts the word, then the
//     longest "##" piece that continues it, and so on; a word with no such spelling, or longer than
//     max_input_chars_per_word characters, is the one piece [UNK].
// Which characters are which (tokenizer/wordpiece_tables.inc) was read from `tokenizers` itself, one
// code point at a time, by tools/dev/make_wordpiece_tables.py.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <ordo/tokenizer/tokenizer.h>

namespace ordo {

class WordPiece {
 public:
  // vocab.txt: one piece a line, its id the line's index. The settings come from tokenizer.json's
  // normalizer and model beside it, else tokenizer_config.json (do_lower_case, strip_accents,
  // tokenize_chinese_chars), else BERT's defaults (lowercase, accents stripped with it, CJK split).
  static std::unique_ptr<WordPiece> load(const std::string& path);

  // The pieces of `text` (no [CLS] or [SEP]); spans as Tokenizer::encode gives them. Valid UTF-8 only.
  Tokenization encode(std::string_view text, std::vector<Span>* spans) const;

  int size() const { return int(pieces_.size()); }
  int id(const std::string& piece) const;  // -1 if not in the vocabulary
  const std::string& piece(int id) const { return pieces_[size_t(id)]; }
  int unk_id() const { return unk_; }

  bool lowercase = true;
  bool strip_accents = true;
  bool chinese_chars = true;
  int max_chars_per_word = 100;
  // The pieces that open and close a text and stand for a masked word: BERT's [CLS], [SEP], [MASK] unless
  // the directory names others (tokenizer_config.json's cls_token, sep_token, mask_token; tokenizer.json's
  // post_processor): MPNet's <s>, </s>, <mask>
  std::string cls = "[CLS]", sep = "[SEP]", mask = "[MASK]";
  // Pieces kept whole in a text (Tokenizer::special_tokens): tokenizer.json's added_tokens when it
  // has them, else those of [PAD] [UNK] [CLS] [SEP] [MASK] the vocabulary holds.
  std::vector<SpecialToken> special;
  // tokenizer.json's added tokens marked "normalized": true, which `tokenizers` looks for in the text as
  // step 1 leaves it (so "<MASK>" is <mask> when the text is lowercased): encode() does the same, the
  // leftmost and then the longest, each a piece of its own
  std::vector<SpecialToken> normalized_special;

 private:
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int> ids_;
  int unk_ = -1;
  std::vector<std::vector<uint32_t>> normalized_cps_;  // normalized_special's, as encode's step 1 spells them
};

}  // namespace ordo
