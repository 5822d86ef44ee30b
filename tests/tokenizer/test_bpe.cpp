// RoBERTa's byte-level BPE (tokenizer/bpe.h) piece by piece, on cases computed by hand from its rules: the
// bytes' characters, GPT-2's split into words, the order of merges, special tokens, spans; and the one-line
// errors of bad files. tests/models/test_bpe.py holds it to `tokenizers` and transformers on hostile text.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "temp_dir.h"
#include "tokenizer/bpe.h"
#include "tokenizer/utf8.h"

namespace ordo {
namespace {

using nlohmann::json;

using Dir = test::TempDir;

// A vocabulary whose first 256 ids are the bytes' characters in byte order (so a lone byte's id is its value),
// then `more` pieces from 256 on.
json vocabulary(const std::vector<std::string>& more) {
  json v = json::object();
  for (int b = 0; b < 256; ++b) v[BytePairEncoding::byte_char(static_cast<unsigned char>(b))] = b;
  for (size_t i = 0; i < more.size(); ++i) v[more[i]] = 256 + i;
  return v;
}

// tokenizer.json as tokenizers saves a RoBERTa-style one
json tokenizer_json(const std::vector<std::string>& more, const std::vector<std::string>& merges) {
  return json{{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}}},
              {"post_processor",
               {{"type", "RobertaProcessing"}, {"sep", {"</s>", 258}}, {"cls", {"<s>", 256}}, {"trim_offsets", true}}},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"vocab", vocabulary(more)},
                {"merges", merges}}}};
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  for (const Span& s : BytePairEncoding::words(text)) out.emplace_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(BytePairEncoding, EachByteIsOneCharacter) {
  // printable bytes stand for themselves; the 68 others, in byte order, for U+0100 on
  EXPECT_EQ(BytePairEncoding::byte_char('a'), "a");
  EXPECT_EQ(BytePairEncoding::byte_char('!'), "!");
  EXPECT_EQ(BytePairEncoding::byte_char(0x00), "\u0100");  // Ā, the first of the shifted
  EXPECT_EQ(BytePairEncoding::byte_char('\n'), "\u010A");  // Ċ: 0x0A is the 11th
  EXPECT_EQ(BytePairEncoding::byte_char(' '), "\u0120");   // Ġ: 0x20 is the 33rd
  EXPECT_EQ(BytePairEncoding::byte_char(0x7F), "\u0121");  // ġ: after 0x00 .. 0x20
  EXPECT_EQ(BytePairEncoding::byte_char(0x80), "\u0122");
  EXPECT_EQ(BytePairEncoding::byte_char(0xA0), "\u0142");  // 0x80 .. 0xA0 are 33 more
  EXPECT_EQ(BytePairEncoding::byte_char(0xA1), "\u00A1");  // ¡ is printable
  EXPECT_EQ(BytePairEncoding::byte_char(0xAD), "\u0143");  // the soft hyphen is the 68th and last
  EXPECT_EQ(BytePairEncoding::byte_char(0xFF), "\u00FF");
  std::set<std::string> all;
  for (int b = 0; b < 256; ++b) all.insert(BytePairEncoding::byte_char(static_cast<unsigned char>(b)));
  EXPECT_EQ(all.size(), 256u);
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, worked by hand
TEST(BytePairEncoding, WordsByGpt2sPattern) {
  // a word takes the one space before it; of two spaces before a word the first stands alone
  EXPECT_EQ(words("it's  a cat's 3.14!!"),
            (std::vector<std::string>{"it", "'s", " ", " a", " cat", "'s", " 3", ".", "14", "!!"}));
  // other whitespace before a word is a word of its own (only U+0020 joins the next word); at the end, one run
  EXPECT_EQ(words("hello\n\nworld  "), (std::vector<std::string>{"hello", "\n", "\n", "world", "  "}));
  EXPECT_EQ(words("a\t b"), (std::vector<std::string>{"a", "\t", " b"}));
  // contractions are lowercase and come first: "'S" is not one, "'sam" is 's then am
  EXPECT_EQ(words("'S 're 'll've 'sam"),
            (std::vector<std::string>{"'", "S", " '", "re", " '", "ll", "'ve", " '", "sam"}));
  EXPECT_EQ(words("'sam"), (std::vector<std::string>{"'s", "am"}));
  // letters, numbers and the rest beyond ASCII: ï é 日 are letters, ² a number, U+00A0 whitespace, U+0301 neither
  EXPECT_EQ(
      words("naïve café 日本 語 x² \xC2\xA0"
            "a e\xCC\x81"),
      (std::vector<std::string>{"naïve", " café", " 日本", " 語", " x", "²", " ", "\xC2\xA0", "a", " e", "\xCC\x81"}));
  EXPECT_TRUE(words("").empty());
  EXPECT_EQ(words(" "), (std::vector<std::string>{" "}));
}

TEST(BytePairEncoding, MergesLowestRankFirstLeftmostOnATie) {
  Dir dir;
  // pieces 256 <s>, 257 <pad>, 258 </s>, 259 ab, 260 bc, 261 aa, 262 abc, 263 Ġab
  const std::vector<std::string> more = {"<s>", "<pad>", "</s>", "ab", "bc", "aa", "abc", "\u0120ab"};
  write(dir.path + "/tokenizer.json", tokenizer_json(more, {"b c", "a b", "a a", "\u0120 ab"}).dump());
  const Tokenizer tok = Tokenizer::load(dir.path + "/tokenizer.json");
  EXPECT_STREQ(tok.kind(), "byte-level bpe");
  EXPECT_EQ(tok.size(), 264);
  EXPECT_EQ(tok.bos_id(), 256);
  EXPECT_EQ(tok.eos_id(), 258);
  // "abc": b c (rank 0) before a b (rank 1), and "a bc" is no merge: a, bc
  EXPECT_EQ(tok.encode("abc").ids, (std::vector<int32_t>{'a', 260}));
  // "aaa": a a twice at one rank, the leftmost first: aa, a
  EXPECT_EQ(tok.encode("aaa").ids, (std::vector<int32_t>{261, 'a'}));
  // " ab": Ġ a b → Ġ ab (rank 1) → Ġab (rank 3); a byte with no merge is its own id
  EXPECT_EQ(tok.encode(" ab!").ids, (std::vector<int32_t>{263, '!'}));
  EXPECT_EQ(tok.encode(" ab!").pieces, (std::vector<std::string>{"\u0120ab", "!"}));
  // a model without a type (as tokenizers wrote one before it named it) is BPE when it has merges
  json untyped = tokenizer_json(more, {"b c", "a b", "a a", "\u0120 ab"});
  untyped["model"].erase("type");
  write(dir.path + "/tokenizer.json", untyped.dump());
  EXPECT_EQ(Tokenizer::load(dir.path + "/tokenizer.json").encode("abc").ids, (std::vector<int32_t>{'a', 260}));
  // with "a bc" listed (rank 4), abc follows
  write(dir.path + "/tokenizer.json", tokenizer_json(more, {"b c", "a b", "a a", "\u0120 ab", "a bc"}).dump());
  EXPECT_EQ(Tokenizer::load(dir.path + "/tokenizer.json").encode("abc").ids, (std::vector<int32_t>{262}));
}

// A byte the vocabulary lacks: model.unk_token's piece (one for a run with fuse_unk), or, without one, nothing,
// and its neighbours meet as if it were not there; ignore_merges: a word the vocabulary holds is that piece.
TEST(BytePairEncoding, UnknownBytesAndIgnoreMerges) {
  Dir dir;
  json j = tokenizer_json({}, {"a b"});
  j["model"]["vocab"] = {{"a", 0}, {"b", 1}, {"<unk>", 2}, {"ab", 3}, {"abb", 4}};
  const auto load = [&](const json& model) {
    json t = j;
    if (model.is_object()) t["model"].update(model);
    write(dir.path + "/tokenizer.json", t.dump());
    return Tokenizer::load(dir.path + "/tokenizer.json");
  };
  EXPECT_EQ(load({}).encode("axxb").ids, (std::vector<int32_t>{3}));
  EXPECT_EQ(load({{"unk_token", "<unk>"}}).encode("axxb").ids, (std::vector<int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(load({{"unk_token", "<unk>"}, {"fuse_unk", true}}).encode("axxb").ids, (std::vector<int32_t>{0, 2, 1}));
  EXPECT_EQ(load({}).encode("abb").ids, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(load({{"ignore_merges", true}}).encode("abb").ids, (std::vector<int32_t>{4}));
}

// Spans: a piece owns the bytes it spells, its space included; a character two pieces share belongs to the
// piece with its last byte, and the pieces before it get begin == end.
TEST(BytePairEncoding, SpansAreBytesOfTheText) {
  Dir dir;
  write(dir.path + "/tokenizer.json",
        tokenizer_json({"<s>", "<pad>", "</s>", "\u0120c", "at"}, {"\u0120 c", "a t"}).dump());
  const Tokenizer tok = Tokenizer::load(dir.path + "/tokenizer.json");
  std::vector<Span> spans;
  // "日" is E6 97 A5, three pieces; " cat" is Ġc and at
  const Tokenization t = tok.encode("\xE6\x97\xA5 cat", "input", &spans);
  EXPECT_EQ(t.ids, (std::vector<int32_t>{0xE6, 0x97, 0xA5, 259, 260}));
  ASSERT_EQ(spans.size(), 5u);
  const std::vector<std::pair<size_t, size_t>> want = {{0, 0}, {0, 0}, {0, 3}, {3, 5}, {5, 7}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(spans[i].begin, want[i].first) << i;
    EXPECT_EQ(spans[i].end, want[i].second) << i;
  }
}

// Special tokens: split first; <mask> takes the whitespace before it (Unicode's White_Space, so U+001C stays);
// add_prefix_space puts a space before each stretch between them.
TEST(BytePairEncoding, SpecialTokensAndPrefixSpace) {
  Dir dir;
  json j = tokenizer_json({"<s>", "<pad>", "</s>", "<unk>"}, {});
  j["added_tokens"] = json::array({{{"id", 256}, {"content", "<s>"}, {"special", true}},
                                   {{"id", 258}, {"content", "</s>"}, {"special", true}},
                                   {{"id", 260}, {"content", "<mask>"}, {"lstrip", true}, {"special", true}}});
  write(dir.path + "/tokenizer.json", j.dump());
  Tokenizer tok = Tokenizer::load(dir.path + "/tokenizer.json");
  EXPECT_EQ(tok.size(), 261) << "<mask> is the next id after the vocabulary";
  EXPECT_EQ(tok.mask_id(), 260);
  EXPECT_EQ(tok.piece(260), "<mask>");
  std::vector<Span> spans;
  const Tokenization t = tok.encode("a \x1C \xE3\x80\x80<mask> b</s>", "input", &spans);
  EXPECT_EQ(t.ids, (std::vector<int32_t>{'a', ' ', 0x1C, 260, ' ', 'b', 258}));
  ASSERT_EQ(spans.size(), 7u);
  EXPECT_EQ(spans[3].begin, 7u);  // <mask> is bytes 7 .. 13; the space and U+3000 before it belong to no piece
  EXPECT_EQ(spans[3].end, 13u);
  std::vector<int> masks;
  EXPECT_EQ(tok.encode_masked("a <mask> b", "input", &masks).ids, (std::vector<int32_t>{'a', 260, ' ', 'b'}));
  EXPECT_EQ(masks, (std::vector<int>{1}));
  // add_prefix_space (tokenizer_config.json's, as RobertaTokenizerFast takes it): " a" before and after </s>
  write(dir.path + "/tokenizer_config.json", R"({"add_prefix_space": true})");
  tok = Tokenizer::load(dir.path + "/tokenizer.json");
  spans.clear();
  EXPECT_EQ(tok.encode("a</s>a", "input", &spans).ids, (std::vector<int32_t>{' ', 'a', 258, ' ', 'a'}));
  EXPECT_EQ(spans[0].end, 0u) << "the space added has no byte in the text";
  EXPECT_EQ(spans[1].begin, 0u);
  EXPECT_EQ(spans[1].end, 1u);
  EXPECT_EQ(tok.encode(" a").ids, (std::vector<int32_t>{' ', 'a'})) << "a stretch that starts with a space gets none";
  try {
    tok.encode("a\xFF");
    FAIL() << "invalid UTF-8 was tokenized";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "input: invalid UTF-8 at byte 1");
  }
}

// vocab.json and merges.txt as RobertaTokenizer reads them: the header line skipped, whitespace between the
// two pieces, RobertaTokenizer's special tokens (<mask> lstrip) unless tokenizer_config.json lists others, those
// the vocabulary lacks added after it.
TEST(BytePairEncoding, VocabJsonAndMergesTxt) {
  Dir dir;
  write(dir.path + "/vocab.json", vocabulary({"<s>", "<pad>", "</s>", "<unk>", "<mask>", "ab"}).dump());
  write(dir.path + "/merges.txt", "#version: 0.2\na  b\n");
  const Tokenizer tok = Tokenizer::load(dir.path + "/vocab.json");
  EXPECT_EQ(tok.encode("ab <mask><s>").ids, (std::vector<int32_t>{261, 260, 256}));
  EXPECT_EQ(tok.unk_id(), 259);
  EXPECT_EQ(tok.special_tokens().size(), 5u);
  // a special token the vocabulary lacks gets the next id after it, as transformers adds it (here <mask>, 261)
  write(dir.path + "/vocab.json", vocabulary({"<s>", "<pad>", "</s>", "<unk>", "ab"}).dump());
  const Tokenizer added = Tokenizer::load(dir.path + "/vocab.json");
  EXPECT_EQ(added.size(), 262);
  EXPECT_EQ(added.mask_id(), 261);
  EXPECT_EQ(added.encode("ab <mask>").ids, (std::vector<int32_t>{260, 261}));
}

// Byte-level BPE loses nothing: on random texts (ASCII, accents, combining marks, CJK, emoji, Unicode spaces),
// the pieces' characters turned back into bytes are the text, the words and the spans cover it in order, each
// span ending on a character's boundary; and the pieces of remembered words are those of words merged afresh.
TEST(BytePairEncoding, RandomTextsComeBackWhole) {
  Dir dir;
  write(dir.path + "/tokenizer.json",
        tokenizer_json(
            {"<s>", "<pad>", "</s>", "th", "the", "\u0120t", "\u0120the", "\u00C3\u00A9", "\u0120\u0120", "he"},
            {"t h", "th e", "\u0120 t", "\u0120t he", "h e", "\u00C3 \u00A9", "\u0120 \u0120"})
            .dump());
  const Tokenizer tok = Tokenizer::load(dir.path + "/tokenizer.json");
  std::map<std::string, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b)
    byte_of[BytePairEncoding::byte_char(static_cast<unsigned char>(b))] = static_cast<unsigned char>(b);
  const std::vector<uint32_t> pool = {'t',    'h',    'e',     ' ',     ' ',    'a',  '\'',  's',     '1',
                                      '!',    '\t',   '\n',    0x85,    0xA0,   0xE9, 0x301, 0x3000,  0x65E5,
                                      0x672C, 0xAC00, 0x1F600, 0x1F3FD, 0x200D, 0xB2, 0x1C,  0x10FFFF};
  std::mt19937 rng(27);
  for (int n = 0; n < 3000; ++n) {
    std::string text;
    const int len = int(rng() % 24);
    for (int i = 0; i < len; ++i) {
      append_utf8(text, pool[rng() % pool.size()]);
    }
    std::vector<Span> spans;
    const Tokenization t = tok.encode(text, "input", &spans);
    // the words remembered give what merging them again gives: the same text again, and a tokenizer just loaded
    EXPECT_EQ(tok.encode(text).ids, t.ids);
    if (n % 30 == 0) {
      EXPECT_EQ(Tokenizer::load(dir.path + "/tokenizer.json").encode(text).ids, t.ids) << text;
    }
    std::string back;
    for (size_t k = 0; k < t.ids.size(); ++k) {
      ASSERT_TRUE(t.ids[k] >= 0 && t.ids[k] < tok.size());
      EXPECT_EQ(t.pieces[k], tok.piece(t.ids[k]));
      for (size_t i = 0; i < t.pieces[k].size();) {  // the piece's characters, each one or two bytes
        const size_t w = static_cast<unsigned char>(t.pieces[k][i]) < 0x80 ? 1 : 2;
        ASSERT_TRUE(byte_of.count(t.pieces[k].substr(i, w))) << t.pieces[k];
        back += char(byte_of[t.pieces[k].substr(i, w)]);
        i += w;
      }
      EXPECT_EQ(spans[k].begin, k ? spans[k - 1].end : 0u) << text;
      EXPECT_LE(spans[k].begin, spans[k].end);
      EXPECT_TRUE(spans[k].end == text.size() || (static_cast<unsigned char>(text[spans[k].end]) & 0xC0) != 0x80);
    }
    EXPECT_EQ(back, text);
    EXPECT_EQ(spans.empty() ? 0u : spans.back().end, text.size()) << text;
    size_t at = 0;
    for (const Span& w : BytePairEncoding::words(text)) {
      EXPECT_EQ(w.begin, at);
      EXPECT_LT(w.begin, w.end);
      at = w.end;
    }
    EXPECT_EQ(at, text.size());
  }
}

std::string error_of(const std::string& path) {
  try {
    Tokenizer::load(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(BytePairEncoding, BadFilesAreOneLine) {
  Dir dir;
  const std::string tj = dir.path + "/tokenizer.json";
  const std::vector<std::string> more = {"<s>", "<pad>", "</s>", "ab"};
  write(tj, "{\"model\": {\"type\": \"BPE\", ");
  EXPECT_EQ(error_of(tj).rfind(tj + ": is not valid JSON (", 0), 0u) << error_of(tj);
  write(tj, tokenizer_json(more, {"a b", "a c"}).dump());
  EXPECT_EQ(error_of(tj), tj + ": model.merges[1] (\"a c\") needs \"ac\", which the vocabulary does not have");
  write(tj, tokenizer_json(more, {"ab x"}).dump());
  EXPECT_EQ(error_of(tj), tj + ": model.merges[0] (\"ab x\") needs \"abx\", which the vocabulary does not have");
  write(tj, tokenizer_json(more, {"a b c"}).dump());
  EXPECT_EQ(error_of(tj), tj + ": model.merges[0] \"a b c\" is not two pieces with a space between");
  json j = tokenizer_json(more, {});
  j["model"]["vocab"]["ab"] = 400;
  write(tj, j.dump());
  EXPECT_EQ(error_of(tj), tj + ": model.vocab's ids are not 0 .. 259 once each (\"ab\": 400)");
  j = tokenizer_json(more, {});
  j["added_tokens"] = json::array({{{"id", 261}, {"content", "<mask>"}}});
  write(tj, j.dump());
  EXPECT_EQ(error_of(tj), tj + ": added_tokens[0]: (\"<mask>\") has id 261, not a piece's id nor the next after the "
                               "260 pieces");
  j = tokenizer_json(more, {});
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  write(tj, j.dump());
  EXPECT_EQ(error_of(tj), tj + ": its pre_tokenizer is not ByteLevel (GPT-2's pattern and bytes), which ordo's "
                               "byte-level BPE (RoBERTa's) does not have");
  j["pre_tokenizer"] = {{"type", 7}};  // not a string: the same line, not a JSON library's exception
  write(tj, j.dump());
  EXPECT_EQ(error_of(tj), tj + ": its pre_tokenizer is not ByteLevel (GPT-2's pattern and bytes), which ordo's "
                               "byte-level BPE (RoBERTa's) does not have");
  j = tokenizer_json(more, {});
  j["model"]["unk_token"] = "<unk>";
  write(tj, j.dump());
  EXPECT_EQ(error_of(tj), tj + ": model.unk_token \"<unk>\" is not in the vocabulary");
  write(tj, R"({"model": {"type": "Unigram", "vocab": []}})");
  EXPECT_EQ(error_of(tj), tj + ": has a Unigram model; ordo reads a WordPiece or byte-level BPE tokenizer.json, "
                               "vocab.txt, vocab.json, or a sentencepiece model");
  std::filesystem::remove(tj);

  const std::string vj = dir.path + "/vocab.json";
  write(vj, vocabulary(more).dump());
  EXPECT_EQ(error_of(vj).rfind(dir.path + "/merges.txt: cannot open", 0), 0u) << error_of(vj);
  write(dir.path + "/merges.txt", "#version: 0.2\na b\nab\n");
  EXPECT_EQ(error_of(vj), dir.path + "/merges.txt: line 3 is not two pieces with a space between");
  write(dir.path + "/merges.txt", "#version: 0.2\na b\nb \xC4\x80\n");
  EXPECT_EQ(error_of(vj), dir.path +
                              "/merges.txt: merge 2 (\"b \xC4\x80\") needs \"b\xC4\x80\", which the "
                              "vocabulary does not have");
  write(vj, "[1, 2]");
  EXPECT_EQ(error_of(vj), vj + ": is not an object of pieces and their ids");
}

}  // namespace
}  // namespace ordo
