// Reliability: strict JSON, long and broken input, closed pipes and full disks, empty batches.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "engine/errors.h"
#include "engine/strict_json.h"
#include "test_util.h"
#include "tokenizer/charsmap.h"
#include "tools/ordo.h"

namespace ordo {
namespace {

using test::quote;
using test::run_ordo;

const std::string kModel = std::string(" --model ") + ORDO_DEFAULT_MODEL + " ";

std::string strict_error(const std::string& text) {
  try {
    parse_strict_json(text.data(), text.data() + text.size(), "f", "x");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StrictJson, NestingLimitIsExact) {
  const auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(strict_error(nested(kMaxJsonDepth)), "");
  EXPECT_EQ(strict_error(nested(kMaxJsonDepth + 1)), "f: x nests deeper than 32 levels");
  EXPECT_EQ(strict_error(std::string(1000000, '[')), "f: x nests deeper than 32 levels") << "stops early";
}

TEST(StrictJson, RepeatedKeysOnlyWithinOneObject) {
  EXPECT_EQ(strict_error(R"({"a": {"k": 1}, "b": {"k": 2}})"), "") << "the same key in two objects is fine";
  EXPECT_EQ(strict_error(R"({"a": {"k": 1, "k": 2}})"), "f: x repeats the key \"k\"");
  EXPECT_EQ(strict_error(R"({"a": 1, "b": [{"a": 1}], "a": 2})"), "f: x repeats the key \"a\"");
}

TEST(StrictJson, NulIsNotTheEnd) {
  EXPECT_EQ(strict_error(std::string("{}\0 garbage", 11)), "f: x is not valid JSON: a NUL byte at byte 2");
}

TEST(StrictJson, BriefAndQuotedStayShortAndOnOneLine) {
  EXPECT_EQ(brief(nlohmann::json::parse("[1,2,3]")), "an array of 3");
  EXPECT_EQ(brief(nlohmann::json("a\nb")), "\"a\\nb\"");
  EXPECT_LE(brief(nlohmann::json(std::string(1000, 'x'))).size(), 43u);
  EXPECT_EQ(quote_name("a\nb"), "\"a\\nb\"");
}

TEST(Charsmap, DefaultModelPassesAndBrokenTriesFail) {
  std::ifstream in(std::string(ORDO_DEFAULT_MODEL) + "/tokenizer.model", std::ios::binary);
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

TEST(Input, TenMegabyteLineFailsCleanlyOrIsCut) {
  test::TempDir dir;
  const std::string file = dir.path + "/long.txt";
  {
    std::ofstream out(file);
    for (int i = 0; i < 10 * 1024 * 1024 / 23; ++i) out << "the cat sat on the mat ";
    out << "\nshort line\n";
  }
  const auto r = run_ordo("encode" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file + ": line 1: text is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-tokens 8192"), std::string::npos) << r.err;
  const auto cut = run_ordo("encode --json --max-tokens 100 --truncate" + kModel + "--input " + file);
  ASSERT_EQ(cut.status, 0) << cut.err;
  std::istringstream lines(cut.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(nlohmann::json::parse(first)["ids"].size(), 100u);
  EXPECT_EQ(nlohmann::json::parse(second)["text"], "short line");
}

TEST(Input, ClosedPipeEndsQuietly) {
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "the cat sat on the mat number " + std::to_string(i) + "\n";
  test::TempDir dir;
  std::ofstream(dir.path + "/in.txt") << many;
  // bash reports each stage's status; ordo's output far exceeds the pipe buffer, so it meets EPIPE.
  const std::string cmd =
      "bash -c " + quote(std::string(ORDO_BINARY) + " encode" + kModel + "--json --input " + dir.path + "/in.txt 2>" +
                         dir.path + "/err | head -c 100 >/dev/null; echo ${PIPESTATUS[0]}");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[64] = {0};
  ASSERT_NE(std::fgets(buf, sizeof buf, p), nullptr);
  ::pclose(p);
  const int status = std::atoi(buf);
  EXPECT_TRUE(status == 141 || status == 0) << "status " << status << ": SIGPIPE (128 + 13) or a clean exit";
  std::ifstream err(dir.path + "/err");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {});
  EXPECT_EQ(err_text, "") << "a reader that went away is not an error";
}

TEST(Input, FullDiskIsAnError) {
  const auto r = run_ordo("encode" + kModel + "hello >/dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: ordo encode: cannot write to stdout: No space left on device\n");
}

TEST(Pipeline, BatchOfEmptyTextsIsZeros) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  for (Pooling pooling : {Pooling::Mean, Pooling::First, Pooling::None}) {
    const auto out = pipeline.encode(std::vector<std::string>{"", ""}, pooling);
    ASSERT_EQ(out.size(), 2u);
    for (const Encoded& e : out) {
      EXPECT_EQ(e.rows, pooling == Pooling::None ? 0 : 1);
      for (float v : e.values) EXPECT_EQ(v, 0.0f);
    }
  }
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

TEST(Init, RefusesAConfigTooLargeForMemory) {
  test::TempDir dir;
  std::ofstream(dir.path + "/huge.json") << R"({"vocab_size": 16777216, "d_model": 16777216, "n_heads": 1,
    "d_ff": 1, "n_layers": 16777216, "positional_encoding": "none"})";
  std::ofstream(dir.path + "/big.json") << R"({"vocab_size": 16777216, "d_model": 65536, "n_heads": 1,
    "d_ff": 1, "n_layers": 1, "positional_encoding": "none"})";
  auto r = test::run_ordo("init --config " + dir.path + "/huge.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + dir.path + "/huge.json: the parameter count overflows 64 bits\n");
  r = test::run_ordo("init --config " + dir.path + "/big.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  // V·d + 4d² + 2F·d + F + 9d = 2^40 + 2^34 + 2^17 + 1 + 9·2^16 floats = 4466769395428 bytes
  EXPECT_NE(r.err.find("big.json: asks for 4259842 MiB of weights"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ordo
