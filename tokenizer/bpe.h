// ordo: GPT-2's byte-level BPE, as RoBERTa's tokenizer has it (tokenizer.json, or vocab.json + merges.txt),
// beside WordPiece and sentencepiece. Internal to tokenizer/: ordo::Tokenizer loads it for a tokenizer.json
// whose model is "BPE", or a file named vocab.json, and answers through it.
//
// Three steps, as Hugging Face's `tokenizers` takes them (its ByteLevel pre-tokenizer and BPE model), on each
// stretch of text between two special tokens (Tokenizer::encode splits at those first):
//  1. Words, by GPT-2's pattern, the first alternative that matches at each place:
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     so a word owns the one space (U+0020) before it, and a run of whitespace before a word leaves its last
//     space to that word. With add_prefix_space, a stretch that does not start with a space gets one first.
//  2. Each byte of a word is one character: bytes_to_unicode, printable bytes themselves ("a" is "a"), the
//     others shifted past U+00FF in order (the space 0x20 is "Ġ" U+0120, the newline "Ċ" U+010A).
//  3. Merges: of the neighbouring pairs that merges.txt lists, the one listed first (its rank) is joined,
//     the leftmost where it stands twice, until no listed pair is left; each piece's id is its vocab.json id.
// Which characters are letters, numbers and whitespace (tokenizer/bpe_tables.inc) was read from `tokenizers`
// itself, one code point at a time, by tools/dev/make_bpe_tables.py.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <ordo/tokenizer/tokenizer.h>

namespace ordo {

class BytePairEncoding {
 public:
  // tokenizer.json (model.vocab, model.merges, added_tokens, pre_tokenizer, post_processor), or vocab.json
  // with merges.txt beside it; tokenizer_config.json (and special_tokens_map.json) beside either give what
  // transformers' RobertaTokenizerFast takes from them: add_prefix_space (false unless they say it), the
  // special tokens' names and flags. Throws InputError(file, what is wrong).
  static std::unique_ptr<BytePairEncoding> load(const std::string& path);

  // The pieces of `text` (valid UTF-8; no <s> or </s>); spans as Tokenizer::encode gives them: a piece owns
  // the bytes it spells (the space of "Ġthe" included); a character whose bytes two pieces share belongs to
  // the piece holding its last byte, and the others get begin == end.
  Tokenization encode(std::string_view text, std::vector<Span>* spans) const;

  int size() const { return int(pieces_.size()); }
  int id(const std::string& piece) const;  // -1 if not in the vocabulary
  const std::string& piece(int id) const { return pieces_[size_t(id)]; }
  int unk_id() const { return unk_; }

  // Each stretch between special tokens starts with a space (tokenizer_config.json's add_prefix_space).
  bool add_prefix_space = false;
  // The pieces that open and close a text, and the mask: RoBERTa's <s>, </s>, <mask> unless the files
  // name others (post_processor's cls and sep; cls_token, sep_token, mask_token).
  std::string cls = "<s>", sep = "</s>", mask = "<mask>";
  // Pieces kept whole in a text (Tokenizer::special_tokens): tokenizer.json's added_tokens, else
  // tokenizer_config.json's added_tokens_decoder, else <s> <pad> </s> <unk> <mask> (lstrip), as RobertaTokenizer.
  std::vector<SpecialToken> special;

  // Step 1 alone: where each word of `text` (valid UTF-8) begins and ends, in bytes.
  static std::vector<Span> words(std::string_view text);
  // Step 2 alone: the character that stands for byte b, in UTF-8.
  static const std::string& byte_char(unsigned char b);

 private:
  struct Merge {
    int rank;
    int id;  // the joined piece's
  };
  static uint64_t key(int left, int right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }
  // Step 3 on one word (its bytes): ids, and where each piece ends in the word's bytes.
  void merge(std::string_view word, std::vector<int>& ids, std::vector<size_t>& ends) const;
  // The same, remembered: the first kCacheWords words of up to kCacheBytes bytes are kept with their pieces
  // (a text repeats its words; tokenizers keeps 10,000 the same way), and a word met again is looked up.
  void merge_cached(std::string_view word, std::vector<int>& ids, std::vector<size_t>& ends) const;
  static constexpr size_t kCacheWords = 10000, kCacheBytes = 64;
  struct Pieces {
    std::vector<int> ids;
    std::vector<size_t> ends;
  };
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, Pieces> cache_;

  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) → rank and joined id
  int byte_id_[256];                            // the id of each byte's character, -1 if none
  int unk_ = -1;                                // model.unk_token's id, -1 for none (RoBERTa's)
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;  // a word the vocabulary holds whole is that piece (model.ignore_merges)
};

}  // namespace ordo
