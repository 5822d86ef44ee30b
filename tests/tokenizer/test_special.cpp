// Special tokens in a text ("[SEP]", "<mask>", "<extra_id_0>"): kept whole by the tokenizers of
// Hugging Face directories, the text between them tokenized alone, whitespace beside them dropped
// only where the token asks (lstrip, rstrip); ordo's own tokenizer.model has none.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "paths.h"
#include "temp_dir.h"

namespace ordo {
namespace {

const std::string kDefault = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";

using Dir = test::TempDir;

// a + [special] + b, as the tokenizer gives them alone
Tokenization joined(const Tokenization& a, const std::string& piece, int32_t id, const Tokenization& b) {
  Tokenization t = a;
  t.pieces.push_back(piece);
  t.ids.push_back(id);
  t.pieces.insert(t.pieces.end(), b.pieces.begin(), b.pieces.end());
  t.ids.insert(t.ids.end(), b.ids.begin(), b.ids.end());
  return t;
}

TEST(SpecialTokens, WordPieceKeepsThemWholeWhereverTheyStand) {
  Dir dir;
  std::ofstream(dir.path + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\n##b\n[\n]\nsep\nmask\n";
  const Tokenizer tok = Tokenizer::load(dir.path + "/vocab.txt");
  ASSERT_EQ(tok.special_tokens().size(), 5u);
  std::vector<Span> spans;
  // "[SEP]" between two words with no space; "[sep]" is not it (case and all); "[[MASK]]" keeps the brackets
  const Tokenization t = tok.encode("a[SEP]bb [sep] [[MASK]", "input", &spans);
  EXPECT_EQ(t.pieces, (std::vector<std::string>{"a", "[SEP]", "b", "##b", "[", "sep", "]", "[", "[MASK]"}));
  EXPECT_EQ(t.ids, (std::vector<int32_t>{5, 3, 6, 7, 8, 10, 9, 8, 4}));
  ASSERT_EQ(spans.size(), 9u);
  EXPECT_EQ(spans[1].begin, 1u);  // "[SEP]" is bytes 1..6
  EXPECT_EQ(spans[1].end, 6u);
  EXPECT_EQ(spans[2].begin, 6u);  // "b" after it, counted in the whole text
  EXPECT_EQ(spans[8].begin, 16u);
  EXPECT_EQ(spans[8].end, 22u);
  // tokenizer.json's added_tokens, when it has them, are the list
  std::ofstream(dir.path + "/tokenizer.json")
      << R"({"added_tokens": [{"id": 11, "content": "mask", "lstrip": false, "rstrip": "yes"}],
             "normalizer": {"type": "BertNormalizer"}})";
  const Tokenizer only = Tokenizer::load(dir.path + "/vocab.txt");
  ASSERT_EQ(only.special_tokens().size(), 1u);
  EXPECT_FALSE(only.special_tokens()[0].rstrip) << "a flag that is not true is false";
  EXPECT_EQ(only.encode("[SEP]").pieces, (std::vector<std::string>{"[", "sep", "]"}));
}

// MPNet's WordPiece: <s> and </s> around a text (tokenizer.json's post_processor, or tokenizer_config.json's
// cls_token and sep_token without it), <mask> its mask; an added token marked "normalized" is found in the
// text as step 1 normalizes it (lowercased: "<UNK>" and "<unk>" alike), its own content normalized too
// ("[UNK]" is looked for as "[unk]"), while one that is not normalized matches only as written.
TEST(SpecialTokens, MPNetPiecesAndNormalizedAddedTokens) {
  Dir dir;
  std::ofstream(dir.path + "/vocab.txt")
      << "<s>\n<pad>\n</s>\n<unk>\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n<\n>\nunk\nmask\n<mask>\n";
  std::ofstream(dir.path + "/tokenizer_config.json")
      << R"({"do_lower_case": true, "cls_token": "<s>", "sep_token": "</s>", "unk_token": "[UNK]",
             "mask_token": {"content": "<mask>", "lstrip": true}})";
  const Tokenizer slow = Tokenizer::load(dir.path + "/vocab.txt");
  EXPECT_EQ(slow.bos_id(), 0);
  EXPECT_EQ(slow.eos_id(), 2);
  EXPECT_EQ(slow.mask_id(), 13);
  EXPECT_STREQ(slow.mask_marker(), "<mask>");
  EXPECT_EQ(slow.encode("a <mask></s>").ids, (std::vector<int32_t>{8, 13, 2}));
  std::ofstream(dir.path + "/tokenizer.json") << R"({"added_tokens": [{"id": 0, "content": "<s>", "normalized": false},
                              {"id": 3, "content": "<unk>", "normalized": true},
                              {"id": 4, "content": "[UNK]", "normalized": true},
                              {"id": 13, "content": "<mask>", "lstrip": true, "normalized": false}],
             "normalizer": {"type": "BertNormalizer", "lowercase": true},
             "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}})";
  const Tokenizer fast = Tokenizer::load(dir.path + "/vocab.txt");
  EXPECT_EQ(fast.bos_id(), 0);
  EXPECT_EQ(fast.eos_id(), 2);
  EXPECT_EQ(fast.special_tokens().size(), 2u) << "the normalized ones are the WordPiece tokenizer's own";
  std::vector<Span> spans;
  const Tokenization t = fast.encode("a<UNK>a <unk> [UNK] [unk] <MASK> <mask>", "input", &spans);
  EXPECT_EQ(t.ids, (std::vector<int32_t>{8, 3, 8, 3, 4, 4, 9, 12, 10, 13}));
  ASSERT_EQ(spans.size(), 10u);
  EXPECT_EQ(spans[1].begin, 1u);  // "<UNK>" is bytes 1..6 of the text
  EXPECT_EQ(spans[1].end, 6u);
}

// A directory with a fast tokenizer's tokenizer.json and no vocab.txt: its WordPiece vocabulary is read from
// model.vocab; another model type, or ids that are not 0 .. n − 1, are one line naming the file.
TEST(SpecialTokens, AWordPieceTokenizerJsonAloneIsRead) {
  Dir dir;
  const std::string path = dir.path + "/tokenizer.json";
  std::ofstream(path) << R"({"model": {"type": "WordPiece", "unk_token": "[UNK]",
      "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3, "##b": 4}},
      "added_tokens": [{"id": 2, "content": "[SEP]"}]})";
  const Tokenizer tok = Tokenizer::load(path);
  EXPECT_EQ(tok.size(), 5);
  EXPECT_EQ(tok.encode("ab [SEP] c").pieces, (std::vector<std::string>{"a", "##b", "[SEP]", "[UNK]"}));
  EXPECT_EQ(tok.bos_id(), 1);
  const auto message = [&](const std::string& json) {
    std::ofstream(path) << json;
    try {
      Tokenizer::load(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"model": {"type": "Unigram", "vocab": [["a", 0]]}})"),
            path +
                ": has a Unigram model; ordo reads a WordPiece or byte-level BPE tokenizer.json, vocab.txt, "
                "vocab.json, or a sentencepiece model");
  // a BPE model is read as RoBERTa's byte-level BPE (tests/tokenizer/test_bpe.cpp), which needs its pre-tokenizer
  EXPECT_EQ(message(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"),
            path +
                ": its pre_tokenizer is not ByteLevel (GPT-2's pattern and bytes), which ordo's byte-level BPE "
                "(RoBERTa's) does not have");
  EXPECT_EQ(message(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 2}}})"),
            path + ": model.vocab's ids are not 0 .. 1 once each (\"a\": 2)");
  EXPECT_EQ(message(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 0}}})"),
            path + ": model.vocab's ids are not 0 .. 1 once each (\"a\": 0)");
  // a normalizer whose type is not a string is not BERT's (and no JSON library's exception escapes)
  EXPECT_EQ(message(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "normalizer": {"type": 3}})"),
            "no error");
  EXPECT_EQ(message(R"({"model": {"type": "WordPiece", "vocab": []}})"),
            path + ": model.vocab is not an object of pieces and their ids");
  EXPECT_EQ(message("{").rfind(path + ": is not valid JSON (", 0), 0u) << message("{");
  // nesting is bounded (a tokenizer needs 4 levels; the parsed value is freed by a recursion that deep)
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  const std::string vocab = R"("model": {"type": "WordPiece", "vocab": {"[UNK]": 0}})";
  EXPECT_EQ(message("{" + vocab + R"(, "x": )" + nested(30) + "}"), "no error");
  EXPECT_EQ(message("{" + vocab + R"(, "x": )" + nested(40) + "}"), path + ": nests deeper than 32 levels");
}

TEST(SpecialTokens, T5SentinelsAreCountedDownAfterThePiecesAndTakeTheSpacesBesideThem) {
  Dir dir;
  std::filesystem::copy_file(kDefault, dir.path + "/spiece.model");
  const Tokenizer tok = Tokenizer::load(dir.path + "/spiece.model");
  const int n = tok.size();
  // <extra_id_0> is the last of 100 ids after the pieces; "<extra_id_100>" is text
  EXPECT_EQ(tok.encode("<extra_id_0>").ids, (std::vector<int32_t>{n + 99}));
  EXPECT_EQ(tok.encode("<extra_id_99>").ids, (std::vector<int32_t>{n}));
  EXPECT_EQ(tok.piece(n + 99), "<extra_id_0>");
  EXPECT_GT(tok.encode("<extra_id_100>").ids.size(), 1u);
  // a sentinel drops the whitespace on both sides (U+3000 before, U+0085 after: Python's isspace());
  // </s> drops none, and U+0085 after it is tokenized with the text it starts
  const std::string nel = "\xC2\x85";  // U+0085
  const Tokenization a = tok.encode("a"), b = tok.encode("b"), nel_b = tok.encode(nel + "b");
  const Tokenization s = tok.encode("a \xE3\x80\x80<extra_id_1>" + nel + "b");
  EXPECT_EQ(s.ids, joined(a, "<extra_id_1>", n + 98, b).ids);
  const int eos = tok.eos_id();
  ASSERT_GE(eos, 0);
  const Tokenization e = tok.encode("a</s>" + nel + "b");
  EXPECT_EQ(e.ids, joined(a, "</s>", eos, nel_b).ids);
  EXPECT_NE(nel_b.ids, b.ids) << "U+0085 is not dropped by the model itself";
  // a vocabulary of fewer ids than the sentinels' forgets them
  Tokenizer small = Tokenizer::load(dir.path + "/spiece.model");
  small.keep_special_tokens_below(n + 50);
  EXPECT_GT(small.encode("<extra_id_0>").ids.size(), 1u);
  EXPECT_EQ(small.encode("<extra_id_99>").ids, (std::vector<int32_t>{n}));
}

TEST(SpecialTokens, XlmrMaskTakesTheSpacesBeforeIt) {
  Dir dir;
  std::filesystem::copy_file(kDefault, dir.path + "/sentencepiece.bpe.model");
  const Tokenizer tok = Tokenizer::load(dir.path + "/sentencepiece.bpe.model");
  const int mask = tok.mask_id();
  ASSERT_EQ(mask, tok.size() - 1);
  const Tokenization x = tok.encode("x"), y = tok.encode("\xC2\x85y");
  EXPECT_EQ(tok.encode("x \xE3\x80\x80<mask>\xC2\x85y").ids, joined(x, "<mask>", mask, y).ids);
  EXPECT_EQ(tok.encode("<s>").ids, (std::vector<int32_t>{0}));
  EXPECT_EQ(tok.encode("<pad></s><unk>").ids, (std::vector<int32_t>{1, 2, 3}));
}

TEST(SpecialTokens, OrdosOwnTokenizerHasNone) {
  const Tokenizer tok = Tokenizer::load(kDefault);
  EXPECT_TRUE(tok.special_tokens().empty());
  EXPECT_GT(tok.encode("</s>").ids.size(), 1u);
  EXPECT_GT(tok.encode("<mask>").ids.size(), 1u);
}

}  // namespace
}  // namespace ordo
