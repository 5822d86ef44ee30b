// The browser's tokenizer (tokenizer/unigram.cpp) against sentencepiece (Tokenizer, tokenizer.cpp):
// the same pieces, ids and spans for every text, on the default model and on variants of it with
// other normalizer settings, for ordinary and hostile text.
#include <gtest/gtest.h>

#include <random>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "common/regular_file.h"
#include "paths.h"
#include "tokenizer/unigram.h"

namespace ordo {
namespace {

std::string read(const std::string& path) {
  return read_regular_file(path, uint64_t(1) << 30, "a test file");
}

// Texts: the walkthrough's, text with every kind of space and normalization, and random mixtures
// of characters from many scripts and classes (fixed seed).
std::vector<std::string> texts() {
  std::vector<std::string> t = {
      "the cat sat on the mat",
      "the mat sat on the cat",
      "",
      " ",
      "   ",
      "\t\n",
      "a",
      " a ",
      "  a  b  ",
      "It is a truth universally acknowledged, that a single man in possession of a good fortune",
      "ﬁne Ａ① ｶﾀｶﾅ ℌ ㎏ ½",
      "日本語のテキスト",
      "emoji 👍🏽 and 👨‍👩‍👧 family",
      "e\xCC\x81 e\xCC\x81\xCC\x81",
      "zero\xE2\x80\x8Bwidth",
      "nbsp\xC2\xA0here",
      "ideographic\xE3\x80\x80space",
      "\xEF\xBF\xBD replacement",
      std::string("nul\0inside", 10),
      "\x01\x02\x7F control",
      "right-to-left שלום عربى",
      "the <mask> sat",
      "<s> </s> <unk> <0x41>",
      "▁▁ already ▁ marked",
      "x▁y",
      std::string(300, ' ') + "far" + std::string(300, ' '),
      std::string(2000, 'a'),
      "Ǆ ǅ ǆ ﬀ ﬃ Ⅻ ⁵ ₅ ™ ℡",
      "Ａｂｃ１２３！？",
      "\xE2\x80\xA8line\xE2\x80\xA9para",
      "tabs\tand\nnewlines\r\nand\vvertical\fform"};
  const std::vector<std::string> alphabet = {" ",
                                             "  ",
                                             "\t",
                                             "\n",
                                             "\r",
                                             "\xC2\xA0",
                                             "\xE3\x80\x80",
                                             "\xE2\x80\x83",
                                             "\xE2\x80\x8B",
                                             "a",
                                             "b",
                                             "e",
                                             "t",
                                             "h",
                                             "T",
                                             "Z",
                                             "0",
                                             "7",
                                             ".",
                                             ",",
                                             "!",
                                             "'",
                                             "\"",
                                             "-",
                                             "<",
                                             ">",
                                             "mask",
                                             "<mask>",
                                             "the",
                                             "cat",
                                             "ing",
                                             "tion",
                                             "é",
                                             "e\xCC\x81",
                                             "ß",
                                             "Æ",
                                             "ø",
                                             "ﬁ",
                                             "Ａ",
                                             "ｶ",
                                             "①",
                                             "½",
                                             "™",
                                             "Ω",
                                             "Ω",
                                             "α",
                                             "ж",
                                             "ש",
                                             "ع",
                                             "日",
                                             "本",
                                             "한",
                                             "ア",
                                             "ｱ",
                                             "🙂",
                                             "👍🏽",
                                             "\xE2\x80\x8D",
                                             "\xEF\xB8\x8F",
                                             std::string(1, '\0'),
                                             "\x01",
                                             "\x7F",
                                             "\xF4\x8F\xBF\xBF",
                                             "\xEF\xBF\xBF",
                                             "\xE2\x96\x81",
                                             "\xEF\xBF\xBD"};
  std::mt19937 rng(41);
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const int n = int(rng() % 24);
    for (int k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    t.push_back(s);
  }
  return t;
}

std::string show(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    char b[8];
    std::snprintf(b, sizeof b, c < 0x20 || c == 0x7f ? "\\x%02X" : "%c", c);
    out += b;
  }
  return out;
}

// Each text through both, pieces, ids and spans alike; `inside`: without the dummy prefix.
void same(const std::string& model, const std::string& name) {
  const Tokenizer sp = Tokenizer::parse(model, name);
  const Unigram u = Unigram::parse(model, name);
  EXPECT_EQ(u.size(), sp.size());
  int checked = 0;
  for (const std::string& text : texts()) {
    std::vector<Span> a, b;
    const Tokenization x = sp.encode(text, "text", &a);
    const Tokenization y = u.encode(text, u.add_dummy_prefix(), &b);
    ASSERT_EQ(x.pieces, y.pieces) << name << ": " << show(text);
    ASSERT_EQ(x.ids, y.ids) << name << ": " << show(text);
    ASSERT_EQ(a.size(), b.size()) << name << ": " << show(text);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].begin, b[i].begin) << name << ": " << show(text) << " piece " << i;
      ASSERT_EQ(a[i].end, b[i].end) << name << ": " << show(text) << " piece " << i;
    }
    ++checked;
  }
  EXPECT_GT(checked, 3000);
}

const std::string kDefault = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";

TEST(Unigram, SameAsSentencepieceOnTheDefaultModel) {
  same(read(kDefault), "default");
}

// A normalizer_spec appended to the model merges into the first (protobuf's rule for a repeated
// message field): 0x1A (field 3, bytes), its length, then one field of it set to 0 or empty.
TEST(Unigram, SameAsSentencepieceWithoutTheDummyPrefix) {
  same(read(kDefault) + std::string("\x1A\x02\x18\x00", 4), "no add_dummy_prefix");
}
TEST(Unigram, SameAsSentencepieceKeepingExtraSpaces) {
  same(read(kDefault) + std::string("\x1A\x02\x20\x00", 4), "no remove_extra_whitespaces");
}
TEST(Unigram, SameAsSentencepieceWithoutEscapingSpaces) {
  same(read(kDefault) + std::string("\x1A\x02\x28\x00", 4), "no escape_whitespaces");
}
TEST(Unigram, SameAsSentencepieceWithoutTheCharsmap) {  // identity: no NFKC
  same(read(kDefault) + std::string("\x1A\x02\x12\x00", 4), "no precompiled_charsmap");
}

TEST(Unigram, RefusesAModelItDoesNotRead) {
  // trainer_spec { model_type: BPE (2) }: 0x12 (field 2, bytes), length 2, 0x18 (field 3, varint), 2.
  try {
    Unigram::parse(read(kDefault) + std::string("\x12\x02\x18\x02", 4), "bpe.model");
    FAIL() << "a BPE model was read as unigram";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a unigram"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ordo
