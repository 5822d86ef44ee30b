// Places where ordo used to surprise its users silently: each now does what it says, or says why not.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::quote;
using test::run_ordo;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// An empty text has no tokens and no vector: no cosine is made up for it.
TEST(Surprises, EmptyTextsHaveNoCosine) {
  for (const std::string& pair : {quote("") + " " + quote(""), quote("") + " " + quote("the cat")}) {
    const auto r = run_ordo("compare " + pair);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("cosine similarity                    undefined           undefined"), std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("note: text A has no tokens"), std::string::npos) << r.err;
    const auto j = run_ordo("compare --json " + pair);
    ASSERT_EQ(j.status, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_TRUE(doc["cosine"]["with_pe"].is_null()) << j.out;
    EXPECT_TRUE(doc["cosine"]["without_pe"].is_null()) << j.out;
  }
  // Two real texts still get their number.
  const auto j = run_ordo("compare --json " + quote("the cat") + " " + quote("a dog"));
  EXPECT_TRUE(nlohmann::json::parse(j.out)["cosine"]["with_pe"].is_number());
  EXPECT_EQ(j.err, "");
}

// The JSON keys come in the documented order, not sorted.
TEST(Surprises, CompareJsonKeysInDocumentedOrder) {
  const auto r = run_ordo("compare --json " + quote("the cat sat") + " " + quote("sat the cat"));
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t a = r.out.find("\"a\""), b = r.out.find("\"b\""), same = r.out.find("\"same_tokens_reordered\""),
               cos = r.out.find("\"cosine\""), tokens = r.out.find("\"tokens\"");
  EXPECT_LT(a, b);
  EXPECT_LT(b, same);
  EXPECT_LT(same, cos);
  EXPECT_LT(cos, tokens);
  EXPECT_LT(r.out.find("\"text\""), r.out.find("\"pieces\"")) << r.out;
  EXPECT_LT(r.out.find("\"pieces\""), r.out.find("\"ids\"")) << r.out;
}

// A model directory named by ORDO_MODEL says so when it is wrong.
TEST(Surprises, ModelFromTheEnvironmentNamesTheVariable) {
  ::setenv("ORDO_MODEL", "/no/such/model", 1);
  const auto r = run_ordo("encode hello");
  ::unsetenv("ORDO_MODEL");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: /no/such/model: no such model directory", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("ORDO_MODEL"), std::string::npos) << r.err;
  // --model names its own directory: no mention of the variable.
  const auto m = run_ordo("encode --model /no/such/model hello");
  EXPECT_EQ(m.err.find("ORDO_MODEL"), std::string::npos) << m.err;
}

// A text that starts with '-' reads as an option: the error says to put it after `--`, which works.
TEST(Surprises, DashTextHintsAtDoubleDash) {
  const auto r = run_ordo("encode " + quote("-5 degrees"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("goes after --: ordo encode -- \"-5 degrees\""), std::string::npos) << r.err;
  const auto ok = run_ordo("encode -- " + quote("-5 degrees"));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"-5 degrees\""), std::string::npos) << ok.out;
  // A mistyped option of the usual shape gets no such hint.
  EXPECT_EQ(run_ordo("encode --poling mean hi").err.find("goes after --"), std::string::npos);
}

// The library's error for a text of a batch names which one.
TEST(Surprises, LibraryNamesTheBadTextOfABatch) {
  Pipeline pipeline(ORDO_DEFAULT_MODEL);
  try {
    pipeline.encode({"fine", "also fine", "bad \xFF byte"}, Pooling::Mean);
    FAIL() << "invalid UTF-8 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("texts[2]: ", 0), 0u) << e.what();
  }
}

std::string write_config(const std::string& dir, int heads, int layers) {
  auto c = nlohmann::json::parse(test::read_file(std::string(ORDO_SOURCE_DIR) + "/models/default/config.json"));
  c["n_heads"] = heads, c["n_layers"] = layers;
  const std::string path = dir + "/config-" + std::to_string(heads) + "-" + std::to_string(layers) + ".json";
  std::ofstream(path) << c.dump();
  return path;
}

// init: a directory every command can load (the default tokenizer copied unless told otherwise), and
// no model replaced without --force.
TEST(Surprises, InitCopiesTheTokenizerAndKeepsAnExistingModel) {
  test::TempDir dir;
  const std::string cfg = std::string(ORDO_SOURCE_DIR) + "/models/default/config.json", m = dir.path + "/m";
  auto r = run_ordo("init --config " + cfg + " --seed 1 --out " + m);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("copied from the default model"), std::string::npos) << r.out;
  EXPECT_EQ(test::read_file(m + "/tokenizer.model"),
            test::read_file(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model"));
  EXPECT_EQ(run_ordo("encode --model " + m + " hello").status, 0);
  const std::string before = test::read_file(m + "/model.safetensors");
  r = run_ordo("init --config " + cfg + " --seed 2 --out " + m);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("already holds a model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(m + "/model.safetensors"), before) << "the model was replaced without --force";
  r = run_ordo("init --config " + cfg + " --seed 2 --force --out " + m);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(test::read_file(m + "/model.safetensors"), before);
  // --no-tokenizer: none copied, and the output says what to do.
  r = run_ordo("init --config " + write_config(dir.path, 1, 1) + " --no-tokenizer --out " + dir.path + "/bare");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(exists(dir.path + "/bare/tokenizer.model"));
  EXPECT_NE(r.out.find("no tokenizer copied"), std::string::npos) << r.out;
  // One head, one layer: singular nouns.
  EXPECT_NE(r.out.find("1 head, d_ff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 layer, vocab"), std::string::npos) << r.out;
}

std::vector<std::string> stage_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] == '[') lines.push_back(l);
  return lines;
}

// trace --no-pe keeps every stage's number: the positions' stage is there, marked skipped.
TEST(Surprises, TraceWithoutPositionsKeepsStageNumbers) {
  const auto with = run_ordo("trace " + quote("the cat sat")),
             without = run_ordo("trace --no-pe " + quote("the cat sat"));
  ASSERT_EQ(with.status, 0) << with.err;
  ASSERT_EQ(without.status, 0) << without.err;
  const auto a = stage_lines(with.out), b = stage_lines(without.out);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string num_a = a[i].substr(0, a[i].find(']')), num_b = b[i].substr(0, b[i].find(']'));
    EXPECT_EQ(num_a, num_b);
    if (a[i].find("positional encoding") != std::string::npos) {
      EXPECT_NE(b[i].find("positional encoding   skipped"), std::string::npos) << b[i];
    } else if (a[i].find("input") == std::string::npos) {  // the input's equation differs: no + PE(t)
      EXPECT_EQ(a[i].substr(0, a[i].find("   ")), b[i].substr(0, b[i].find("   ")));
    }
  }
}

// trace --json: every stage with all its rows and dims, numbered as the text trace numbers them.
TEST(Surprises, TraceJsonHasEveryStageInFull) {
  const auto text = run_ordo("trace " + quote("the cat")), json = run_ordo("trace --json " + quote("the cat"));
  ASSERT_EQ(json.status, 0) << json.err;
  const auto doc = nlohmann::ordered_json::parse(json.out);
  EXPECT_EQ(doc.begin().key(), "text");
  EXPECT_EQ(doc["pieces"].size(), 2u);
  const int d = 64;
  int checked = 0;
  for (const auto& s : doc["stages"]) {
    if (!s.contains("values")) continue;
    ASSERT_EQ(s["values"].size(), s["shape"][0].get<size_t>());
    ASSERT_EQ(s["values"][0].size(), s["shape"][1].get<size_t>());
    // The text trace names the same stage with the same number.
    const std::string head = "[" + std::to_string(s["stage"].get<int>()) + "] ";
    const size_t at = text.out.find("\n" + head);
    ASSERT_NE(at, std::string::npos) << head;
    ++checked;
  }
  EXPECT_GT(checked, 20);
  EXPECT_EQ(doc["hidden"].size(), 2u);
  EXPECT_EQ(doc["hidden"][0].size(), size_t(d));
  EXPECT_EQ(doc["pooled"].size(), size_t(d));
  // The pooled vector is the mean of the hidden rows.
  for (int j = 0; j < d; ++j)
    EXPECT_NEAR(doc["pooled"][j].get<double>(),
                (doc["hidden"][0][j].get<double>() + doc["hidden"][1][j].get<double>()) / 2, 1e-6);
}

// Columns line up in a terminal whatever the script: 日本語 is 6 columns wide, not 3 or 9.
TEST(Surprises, CompareColumnsLineUpWithWideCharacters) {
  const auto r = run_ordo("compare " + quote("日本語 cat") + " " + quote("cat 日本語"));
  ASSERT_EQ(r.status, 0) << r.err;
  auto width = [](const std::string& s) {  // display columns of the test's own texts: CJK 2, others 1
    int n = 0;
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = s[i];
      const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      n += len == 3 && c >= 0xE3 && c <= 0xE9 ? 2 : 1;
      i += len;
    }
    return n;
  };
  std::istringstream in(r.out);
  std::vector<int> number_at;  // the display column where "in A" starts, row by row
  bool table = false;
  for (std::string l; std::getline(in, l);) {
    if (l.find("piece") != std::string::npos && l.find("in A") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table || l.empty()) continue;
    std::smatch m;
    if (!std::regex_search(l, m, std::regex(R"(\s+\d+\s+\d+\s+[\d.]+)"))) break;
    number_at.push_back(width(l.substr(0, size_t(m.position(0)) + m.length(0))));
  }
  ASSERT_GE(number_at.size(), 2u) << r.out;
  for (int at : number_at) EXPECT_EQ(at, number_at[0]) << r.out;
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

// encode: a file and texts together is a mistake, not "the texts win".
TEST(Surprises, EncodeInputWithTextsIsRefused) {
  test::TempDir dir;
  std::ofstream(dir.path + "/in.txt") << "one\ntwo\n";
  const auto r = test::run_ordo("encode --input " + dir.path + "/in.txt extra");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("not both"), std::string::npos) << r.err;
}

// --truncate: the text as given, and a flag saying it was cut.
TEST(Surprises, EncodeTruncateKeepsTheTextAndSaysSo) {
  const auto r = test::run_ordo("encode --json --truncate --max-tokens 2 " + test::quote("the cat sat on the mat") +
                                " " + test::quote("a"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  const auto a = nlohmann::ordered_json::parse(first), b = nlohmann::ordered_json::parse(second);
  EXPECT_EQ(a["text"], "the cat sat on the mat");
  EXPECT_EQ(a["truncated"], true);
  EXPECT_EQ(a["ids"].size(), 2u);
  EXPECT_FALSE(b.contains("truncated"));
  // Keys in the documented order.
  std::vector<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"text", "truncated", "pieces", "ids", "embedding"}));
  const auto t = test::run_ordo("encode --truncate --max-tokens 2 " + test::quote("the cat sat"));
  EXPECT_NE(t.out.find("\"the cat sat\" (truncated)\n  2 pieces:"), std::string::npos) << t.out;
}

// An empty text has no vector: null in JSON and a note, not a row of zeros; counts in the singular.
TEST(Surprises, EncodeEmptyTextHasNoVector) {
  const auto r = test::run_ordo("encode --json --normalize " + test::quote("") + " " + test::quote("a"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_TRUE(j["embedding"].is_null()) << r.out;
  EXPECT_NE(r.err.find("note: argument 1: the text has no tokens"), std::string::npos) << r.err;
  const auto t = test::run_ordo("encode " + test::quote("a"));
  EXPECT_NE(t.out.find("  1 piece: "), std::string::npos) << t.out;
}

// 300,000 empty lines: one note with the count and the first ten, not 300,000 notes.
TEST(Surprises, ManyEmptyTextsGiveOneNote) {
  const auto r = test::run_ordo("encode --json --input -", std::string(300000, '\n'));
  ASSERT_EQ(r.status, 0) << r.err.substr(0, 500);
  EXPECT_EQ(test::count_lines(r.out), 300000);
  EXPECT_EQ(r.err,
            "note: stdin: 300000 texts have no tokens (line 1, line 2, line 3, line 4, line 5, line 6, line 7, line 8, "
            "line 9, line 10, ...), so they have no vector (null)\n");
}

}  // namespace
}  // namespace ordo
