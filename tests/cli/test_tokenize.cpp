// `ordo tokenize`: pieces, ids, the bytes each piece came from, and the unknown pieces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"
#include "paths.h"

namespace ordo {
namespace {

using namespace test::cli;
const std::string kTiny = std::string(" --model ") + ORDO_SOURCE_DIR + "/tests/corpus/odd/bos_eos ";
const std::string kSpace = "\xE2\x96\x81";  // ▁

// Each piece is the text's bytes at its offsets with each space written ▁; the first word's piece
// has the ▁ sentencepiece puts before it, which owns no byte. The offsets run left to right.
TEST(Tokenize, OffsetsSliceTheTextIntoThePieces) {
  const std::vector<std::string> texts = {"the cat sat on the mat", "a", "dogs bark at night"};
  const auto r = run_ordo("tokenize --json" + kModel + quote(texts[0]) + " " + quote(texts[1]) + " " + quote(texts[2]));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const json& j = lines[i];
    EXPECT_EQ(j["text"], texts[i]);
    const std::vector<std::string> keys = {"text", "pieces", "ids", "offsets", "unknown"};
    std::vector<std::string> got;
    for (auto it = j.begin(); it != j.end(); ++it) got.push_back(it.key());
    EXPECT_EQ(got.size(), keys.size());
    ASSERT_EQ(j["pieces"].size(), j["ids"].size());
    ASSERT_EQ(j["offsets"].size(), j["ids"].size());
    EXPECT_EQ(j["unknown"], 0);
    size_t at = 0;
    std::string rebuilt;
    for (size_t k = 0; k < j["pieces"].size(); ++k) {
      const size_t b = j["offsets"][k][0], e = j["offsets"][k][1];
      ASSERT_LE(at, b);
      ASSERT_LE(b, e);
      ASSERT_LE(e, texts[i].size());
      std::string surface;
      for (char c : texts[i].substr(b, e - b)) surface += c == ' ' ? kSpace : std::string(1, c);
      EXPECT_EQ(j["pieces"][k], (k == 0 ? kSpace : "") + surface) << texts[i] << " piece " << k;
      rebuilt += texts[i].substr(b, e - b);
      at = e;
    }
    EXPECT_EQ(rebuilt, texts[i]) << "the pieces' bytes are the whole text";
  }
  // The ids are those encode uses.
  const auto enc = json_lines(run_ordo("encode --json" + kModel + quote(texts[0])).out);
  EXPECT_EQ(enc.at(0)["ids"], lines[0]["ids"]);
}

// Byte fallback (the default tokenizer): 日 is <0xE6> <0x97> <0xA5>, the last of which owns its
// 3 bytes; no piece is unknown.
TEST(Tokenize, ByteFallbackOwnsTheCharacterAtItsLastByte) {
  const auto r = run_ordo("tokenize --json" + kModel + quote("a \xE6\x97\xA5"));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["pieces"], json({kSpace + "a", kSpace, "<0xE6>", "<0x97>", "<0xA5>"}));
  EXPECT_EQ(j["offsets"], json({{0, 1}, {1, 2}, {2, 2}, {2, 2}, {2, 5}}));
  EXPECT_EQ(j["unknown"], 0);
}

// A tokenizer without byte fallback (tests/corpus/odd/bos_eos, which also adds BOS and EOS):
// 日本 is one unknown piece; BOS owns [0, 0) and EOS [n, n).
TEST(Tokenize, UnknownPiecesAndBosEos) {
  const std::string text = "the \xE6\x97\xA5\xE6\x9C\xAC";
  const auto r = run_ordo("tokenize --json" + kTiny + quote(text));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["unknown"], 1);
  const json& off = j["offsets"];
  ASSERT_GE(off.size(), 3u);
  EXPECT_EQ(j["pieces"].front(), "<s>");
  EXPECT_EQ(j["pieces"].back(), "</s>");
  EXPECT_EQ(off.front(), json({0, 0}));
  EXPECT_EQ(off.back(), json({text.size(), text.size()}));
  EXPECT_EQ(off[off.size() - 2], json({4, 10})) << "日本: bytes 4..10";

  const auto human = run_ordo("tokenize" + kTiny + quote(text));
  ASSERT_EQ(human.status, 0) << human.err;
  EXPECT_NE(human.out.find("(1 unknown piece)"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("4..10"), std::string::npos) << human.out;
  const auto known = run_ordo("tokenize" + kModel + quote("the cat"));
  EXPECT_NE(known.out.find("2 pieces:"), std::string::npos) << known.out;
  EXPECT_EQ(known.out.find("unknown"), std::string::npos) << known.out;
}

// Texts from stdin in input order; a bad line stops after the lines before it.
TEST(Tokenize, InputAndBadLines) {
  const auto lines = json_lines(run_ordo("tokenize --json --input -" + kModel, "one\n\ntwo\n").out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["text"], "one");
  EXPECT_EQ(lines[1]["pieces"].size(), 0u);
  EXPECT_EQ(lines[2]["text"], "two");
  const auto bad = run_ordo("tokenize --json" + kModel, std::string("ok\nbad \xff\nmore\n"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "error: stdin: line 2: invalid UTF-8 at byte 4\n");
  EXPECT_EQ(test::count_lines(bad.out), 1);
}

}  // namespace
}  // namespace ordo
