// ordo: a sentencepiece unigram model read and applied without the sentencepiece library, for the
// WebAssembly build (tools/web), where that library is not available. It reads the same model file
// (a serialized ModelProto) and cuts text as sentencepiece 0.1.97's SentencePieceProcessor::Encode
// does: the normalizer (the precompiled_charsmap's longest match, whitespace rules, the dummy
// prefix "▁"), then the best segmentation (Viterbi over the pieces' scores), then byte fallback.
// tests/tokenizer/test_unigram.cpp checks pieces, ids and spans against sentencepiece on many texts.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ordo {

class Unigram {
 public:
  // `proto` must have passed check_sentencepiece_model. Throws InputError(path, ...) for a model
  // this reader does not handle (not unigram, whitespace as suffix) or one without an <unk> piece.
  static Unigram parse(std::string_view proto, const std::string& path);

  // The pieces and ids of `text` (valid UTF-8), and each piece's bytes in `text` if `spans` is
  // given; `dummy_prefix`: whether "▁" goes before the first word (the model's add_dummy_prefix,
  // or false for a segment inside a word).
  Tokenization encode(std::string_view text, bool dummy_prefix, std::vector<Span>* spans = nullptr) const;
  bool add_dummy_prefix() const { return add_dummy_prefix_; }

  int size() const { return int(pieces_.size()); }
  int unk_id() const { return unk_; }
  // The id of `piece`, or unk_id() when the model does not hold it (as sentencepiece's PieceToId).
  int id(const std::string& piece) const;
  const std::string& piece(int id) const { return pieces_[size_t(id)].text; }
  bool is_control(int id) const { return id >= 0 && id < size() && pieces_[size_t(id)].type == kControl; }
  bool is_unknown(int id) const { return id >= 0 && id < size() && pieces_[size_t(id)].type == kUnknown; }
  // Special pieces by the names the trainer gave them (<s>, </s>, <unk> unless changed).
  const std::string& bos_piece() const { return bos_piece_; }
  const std::string& eos_piece() const { return eos_piece_; }
  const std::string& unk_piece() const { return unk_piece_; }

  // Piece types of sentencepiece's ModelProto.
  static constexpr int kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

 private:
  struct Piece {
    std::string text;
    float score = 0;
    int type = kNormal;
  };
  // The longest replacement rule of the charsmap that matches the start of `s`: its length in
  // bytes (0: none) and the replacement.
  size_t longest_rule(std::string_view s, std::string_view& replacement) const;
  void normalize(std::string_view text, bool dummy_prefix, std::string& out, std::vector<size_t>& to_orig) const;

  std::vector<Piece> pieces_;
  std::unordered_map<std::string, int> normal_;    // NORMAL, USER_DEFINED and UNUSED pieces: the lattice's
  std::unordered_map<std::string, int> reserved_;  // CONTROL, UNKNOWN and BYTE pieces
  std::vector<std::string> user_defined_;          // matched whole before the charsmap
  size_t longest_piece_ = 0;
  int unk_ = -1;
  float min_score_ = 0, max_score_ = 0;
  bool byte_fallback_ = false;
  bool add_dummy_prefix_ = true, remove_extra_whitespaces_ = true, escape_whitespaces_ = true;
  std::string trie_;     // the charsmap's double array (little-endian 32-bit units)
  std::string strings_;  // its NUL-terminated replacements
  std::string bos_piece_ = "<s>", eos_piece_ = "</s>", unk_piece_ = "<unk>";
};

}  // namespace ordo
