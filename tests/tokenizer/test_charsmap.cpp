// tokenizer/charsmap: the checks a sentencepiece model passes before sentencepiece reads it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include <ordo/tokenizer/tokenizer.h>

#include "paths.h"
#include "tokenizer/charsmap.h"

namespace ordo {
namespace {

TEST(Charsmap, DefaultModelPassesAndBrokenTriesFail) {
  std::ifstream in(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model", std::ios::binary);
  const std::string model((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(check_sentencepiece_model(model), "");
  EXPECT_NE(check_sentencepiece_model(model.substr(0, model.size() / 2)), "") << "cut mid-field";
  // Root whose children would lie past a 256-unit trie; then a leaf value past the strings.
  std::string blob(4, '\0'), trie(256 * 4, '\0');
  blob[1] = 4;  // 1024 bytes of trie
  uint32_t root = 256u << 10;
  std::memcpy(trie.data(), &root, 4);
  EXPECT_NE(check_charsmap(blob + trie + std::string("A\0", 2)).find("children past"), std::string::npos);
  root = 0;
  const uint32_t a = (uint32_t(0x61 ^ 1) << 10) | (1u << 8) | 0x61, value = 7;
  std::memcpy(trie.data(), &root, 4);
  std::memcpy(trie.data() + 4 * 0x61, &a, 4);
  std::memcpy(trie.data() + 4 * 1, &value, 4);
  EXPECT_NE(check_charsmap(blob + trie + std::string("A\0", 2)).find("past the replacement strings"),
            std::string::npos);
  EXPECT_EQ(check_charsmap(blob + trie + std::string("ABCDEFG\0", 8)), "");
}

// The bound on what sentencepiece's normalizer makes of a text, by hand: "▁the▁cat" is 12 bytes;
// NFKC makes "صلى الله عليه وسلم" of U+FDFA (3 bytes): 15 letters of 2 bytes and 3 spaces, each a
// "▁" of 3, so 39 bytes, and 100 of them 3 + 3900; "Ａ" (3 bytes) becomes "A", counted as the 3 it was.
TEST(Charsmap, TheNormalizedSizeIsBoundedBeforeNormalizing) {
  const Tokenizer tok = Tokenizer::load(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model");
  std::string fdfa;
  for (int i = 0; i < 100; ++i) fdfa += "\uFDFA";
  EXPECT_EQ(tok.normalized_bytes("the cat"), 12u);
  EXPECT_EQ(tok.normalized_bytes(fdfa), 3903u);
  EXPECT_EQ(tok.normalized_bytes("\uFF21"), 6u);
  size_t prefix = 0;
  // Stopped at 1000: 3 + 39 k <= 1000 holds for k = 25 characters (75 bytes), and 26 give 1017.
  EXPECT_EQ(tok.normalized_bytes(fdfa, 1000, &prefix), 1017u);
  EXPECT_EQ(prefix, 75u);
  EXPECT_EQ(tok.normalized_bytes("the cat", 1000, &prefix), 12u);
  EXPECT_EQ(prefix, 7u);
  // Without a table every character is kept: "▁a▁b".
  EXPECT_EQ(normalized_bytes_bound("", "a b"), 8u);
  // The bound holds for what sentencepiece does make: the pieces of "the cat" spell "▁the▁cat".
  std::string spelt;
  for (const std::string& p : tok.encode("the cat").pieces) spelt += p;
  EXPECT_EQ(spelt.size(), 12u);
}

// A user-defined piece of 2,000 bytes (over the old fixed 512) is accepted and matched, as
// sentencepiece accepts it; one longer than the stack allows is refused naming the reason.
TEST(Charsmap, LongUserDefinedPiecesUpToTheStacksLimit) {
  std::ifstream in(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model", std::ios::binary);
  const std::string model((std::istreambuf_iterator<char>(in)), {});
  // ModelProto.pieces (field 1) appended: SentencePiece {piece: 1, score: 2 (float 0), type: 3 = USER_DEFINED (4)}.
  auto varint = [](uint64_t n) {
    std::string out;
    for (; n >= 0x80; n >>= 7) out += char(0x80 | (n & 0x7f));
    return out + char(n);
  };
  auto with_piece = [&](const std::string& piece) {
    const std::string entry = "\x0a" + varint(piece.size()) + piece + std::string("\x15\0\0\0\0\x18\x04", 7);
    return model + "\x0a" + varint(entry.size()) + entry;
  };
  const std::string piece(2000, 'x');
  const Tokenizer tok = Tokenizer::parse(with_piece(piece), "t.model");
  const Tokenization t = tok.encode("a " + piece + " b");
  EXPECT_NE(std::find(t.pieces.begin(), t.pieces.end(), piece), t.pieces.end()) << "the piece matched whole";
  ASSERT_GE(max_piece_bytes(), 512u);
  const std::string too_long = check_sentencepiece_model(with_piece(std::string(max_piece_bytes() + 1, 'x')));
  EXPECT_NE(too_long.find("bytes long, more than the " + std::to_string(max_piece_bytes()) +
                          " this process's stack allows (sentencepiece builds its trie of pieces by recursion"),
            std::string::npos)
      << too_long;
}

}  // namespace
}  // namespace ordo
