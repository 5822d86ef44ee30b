// The tokenizer: the default model's pieces, and what it refuses.
#include <gtest/gtest.h>

#include <algorithm>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "paths.h"

namespace ordo {
namespace {

const std::string kDefault = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";

TEST(Tokenizer, DefaultModelPiecesForTheCatSentence) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  EXPECT_GE(tok.size(), 7900);
  EXPECT_LE(tok.size(), 8000);
  const Tokenization t = tok.encode("the cat sat on the mat");
  EXPECT_EQ(t.pieces,
            (std::vector<std::string>{"\u2581the", "\u2581cat", "\u2581sat", "\u2581on", "\u2581the", "\u2581mat"}));
  ASSERT_EQ(t.ids.size(), 6u);
  EXPECT_EQ(t.ids[0], t.ids[4]) << "both 'the' are the same piece";
  for (size_t i = 0; i < t.ids.size(); ++i) EXPECT_EQ(tok.piece(t.ids[i]), t.pieces[i]);
  // The reordered sentence is the same multiset of ids.
  Tokenization r = tok.encode("the mat sat on the cat");
  std::sort(r.ids.begin(), r.ids.end());
  std::vector<int32_t> sorted = t.ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(r.ids, sorted);
}

TEST(Tokenizer, EmptyTextHasNoPieces) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  EXPECT_TRUE(tok.encode("").ids.empty());
}

TEST(Tokenizer, RejectsInvalidUtf8) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  EXPECT_THROW(tok.encode("caf\xc3"), InputError);              // truncated sequence
  EXPECT_THROW(tok.encode("\xc0\xaf"), InputError);             // overlong '/'
  EXPECT_THROW(tok.encode("\xed\xa0\x80"), InputError);         // a UTF-16 surrogate
  EXPECT_NO_THROW(tok.encode("caf\xc3\xa9 \xf0\x9f\x90\x88"));  // café 🐈
  size_t at = 0;
  EXPECT_FALSE(valid_utf8("ab\xff", &at));
  EXPECT_EQ(at, 2u);
}

TEST(Tokenizer, MissingOrBogusModelIsAnInputError) {
  EXPECT_THROW(Tokenizer::load("/nonexistent/tokenizer.model"), InputError);
  EXPECT_THROW(Tokenizer::load(std::string(ORDO_SOURCE_DIR) + "/models/default/config.json"), InputError);
}

}  // namespace
}  // namespace ordo
