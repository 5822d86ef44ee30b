// The <mask> piece and text with literal <mask> markers (what `ordo fill` reads), and byte
// pieces, in the default tokenizer.
#include <gtest/gtest.h>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "paths.h"

namespace ordo {
namespace {

const std::string kDefault = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";
const std::string kNoMask = std::string(ORDO_SOURCE_DIR) + "/tests/corpus/tiny.model";
const std::string kSpace = "\u2581";

TEST(Mask, IdLookedUpByName) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  ASSERT_GE(tok.mask_id(), 0);
  EXPECT_EQ(tok.piece(tok.mask_id()), "<mask>");
  EXPECT_EQ(Tokenizer::load(kNoMask).mask_id(), -1) << "a tokenizer without the piece has no mask id";
}

TEST(Mask, OrdinaryTextNeverMakesIt) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  for (const char* text : {"<mask>", "the <mask> sat", "<MASK>", "<mask >"})
    for (int32_t id : tok.encode(text).ids) EXPECT_NE(id, tok.mask_id()) << text;
}

TEST(Mask, MarkersBecomeTheMaskPiece) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  const int32_t m = tok.mask_id();
  std::vector<int> at;
  const Tokenization t = tok.encode_masked("the cat sat on the <mask>", "input", &at);
  const Tokenization plain = tok.encode("the cat sat on the");
  ASSERT_EQ(t.ids.size(), plain.ids.size() + 1);
  EXPECT_TRUE(std::equal(plain.ids.begin(), plain.ids.end(), t.ids.begin()));
  EXPECT_EQ(t.ids.back(), m);
  EXPECT_EQ(t.pieces.back(), "<mask>");
  EXPECT_EQ(at, std::vector<int>{int(plain.ids.size())});

  // At the start, twice in a row, and with the text after it encoded as in a sentence.
  const Tokenization u = tok.encode_masked("<mask> <mask> sat on the mat", "input", &at);
  EXPECT_EQ(at, (std::vector<int>{0, 1}));
  EXPECT_EQ(u.ids[0], m);
  EXPECT_EQ(u.ids[1], m);
  const Tokenization rest = tok.encode("sat on the mat");
  EXPECT_EQ(std::vector<int32_t>(u.ids.begin() + 2, u.ids.end()), rest.ids);
}

// The leading-▁ question: sentencepiece starts every text with "▁", so "." alone is ▁ . but in
// "mat." the full stop is the piece "." after ▁mat. A segment glued to a marker is encoded
// without that lone ▁; a segment after a space keeps it, as "the mat ." would.
TEST(Mask, SegmentGluedToAMarkerHasNoLeadingSpacePiece) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  const Tokenization glued = tok.encode_masked("the <mask>.");
  EXPECT_EQ(glued.pieces, (std::vector<std::string>{kSpace + "the", "<mask>", "."}));
  const Tokenization spaced = tok.encode_masked("the <mask> .");
  const Tokenization sentence = tok.encode("the mat .");
  ASSERT_EQ(spaced.pieces.size(), sentence.pieces.size());
  EXPECT_EQ(spaced.pieces[1], "<mask>");
  EXPECT_EQ(std::vector<std::string>(spaced.pieces.begin() + 2, spaced.pieces.end()),
            std::vector<std::string>(sentence.pieces.begin() + 2, sentence.pieces.end()));
  // The full stop of "the mat." is the same piece as the glued one.
  EXPECT_EQ(tok.encode("the mat.").pieces.back(), glued.pieces.back());
}

// A word glued to a marker is the inside of a word: "the <mask>cat" ends with the pieces "cat"
// has in "xcat" (after the x), not with ▁cat, the word-initial piece of "the cat".
TEST(Mask, WordGluedToAMarkerIsTheInsideOfAWord) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  const Tokenization glued = tok.encode_masked("the <mask>cat sat");
  const Tokenization whole = tok.encode("the cat sat");
  EXPECT_EQ(whole.pieces[1], kSpace + "cat") << "the default tokenizer has the word-initial piece";
  // sentencepiece's own split of "cat sat" with add_dummy_prefix off (its Python module): c at ▁sat.
  EXPECT_EQ(glued.pieces, (std::vector<std::string>{kSpace + "the", "<mask>", "c", "at", kSpace + "sat"}));
  // With a space after the marker, the word starts as in a sentence.
  EXPECT_EQ(tok.encode_masked("the <mask> cat sat").pieces,
            (std::vector<std::string>{kSpace + "the", "<mask>", kSpace + "cat", kSpace + "sat"}));
}

TEST(Mask, TextWithoutMarkersIsOrdinaryEncoding) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  std::vector<int> at = {7};
  EXPECT_EQ(tok.encode_masked("the cat sat", "input", &at).ids, tok.encode("the cat sat").ids);
  EXPECT_TRUE(at.empty());
  EXPECT_TRUE(tok.encode_masked("").ids.empty());
}

TEST(Mask, MarkerWithoutAMaskPieceIsAnErrorNamingTheTokenizer) {
  const Tokenizer tok = Tokenizer::load(kNoMask);
  try {
    tok.encode_masked("the <mask> sat");
    ADD_FAILURE() << "should throw";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(kNoMask + ": has no <mask> piece", 0), 0u) << e.what();
  }
  EXPECT_NO_THROW(tok.encode_masked("the cat sat"));  // no marker, no need for the piece
  EXPECT_THROW(Tokenizer::load(kDefault).encode_masked("caf\xc3 <mask>"), InputError);
}

// Byte fallback: a character outside the pieces becomes its UTF-8 bytes, printed as <0xC3>.
TEST(Mask, BytePiecesArePrintable) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  const Tokenization t = tok.encode("caf\xc3\xa9 \xe7\x8c\xab");  // café 猫
  bool bytes = false;
  for (size_t i = 0; i < t.ids.size(); ++i) {
    EXPECT_NE(t.ids[i], 0) << "no character is <unk> with byte fallback";
    EXPECT_EQ(tok.piece(t.ids[i]), t.pieces[i]);
    if (t.pieces[i].size() == 6 && t.pieces[i].rfind("<0x", 0) == 0) bytes = true;
  }
  EXPECT_TRUE(bytes) << "expected a byte piece such as <0xC3>";
  EXPECT_NE(std::find(t.pieces.begin(), t.pieces.end(), "<0xE7>"), t.pieces.end());
  EXPECT_NE(tok.encode("\xc3\xa9").ids, tok.encode("\xe7\x8c\xab").ids) << "é and 猫 no longer both <unk>";
}

}  // namespace
}  // namespace ordo
