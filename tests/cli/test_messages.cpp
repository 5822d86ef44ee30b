// What a new user meets: a value the command line cannot read names its option; `ordo info` shows
// the training length; texts with newlines come in as JSON lines or NUL-ended records.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace test::cli;

// Runs a script with bash; stdout and the status.
test::Run run_shell(const std::string& script) {
  test::Run r{-1, "", ""};
  if (FILE* p = ::popen(("bash -c " + quote(script)).c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return r;
}

// The options declared with a numeric type anywhere in the command line's sources, by name:
// ("threads", "help" "more help", cxxopts::value<int>() ...).
std::set<std::string> numeric_options() {
  std::set<std::string> names;
  const std::regex option(
      R"re(\(\s*"(?:[a-zA-Z],)?([a-z][a-z0-9-]*)",\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*cxxopts::value<(?:int|long|unsigned|double|float|size_t|int64_t|uint64_t|uint32_t|int32_t)>)re");
  for (const char* dir : {"/tools/cli/", "/tools/serve/"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(ORDO_SOURCE_DIR) + dir)) {
      if (entry.path().extension() != ".cpp") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      for (std::sregex_iterator it(s.begin(), s.end(), option), end; it != end; ++it) names.insert((*it)[1]);
    }
  }
  return names;
}

// Every numeric option of every command, given "abc": one error line naming the option and the value.
TEST(Messages, EveryNumericOptionNamesItselfWhenItsValueIsNotANumber) {
  const std::set<std::string> numeric = numeric_options();
  ASSERT_TRUE(numeric.count("threads") && numeric.count("offset") && numeric.count("max-tokens"))
      << "the pattern no longer finds the options in the sources";
  int checked = 0;
  for (const char* cmd : {"encode", "tokenize", "compare", "pe", "init", "info", "trace", "attention", "fill", "score",
                          "bench", "view", "serve", "eval"}) {
    const std::string help = run_ordo(std::string(cmd) + " --help").out;
    for (const std::string& name : numeric) {
      if (help.find("--" + name + " ") == std::string::npos) continue;
      for (const std::string& form : {"--" + name + " abc", "--" + name + "=abc"}) {
        const test::Run r = run_ordo(std::string(cmd) + " " + form + " hi");
        EXPECT_EQ(r.status, 2) << cmd << " " << form << ": " << r.err;
        EXPECT_EQ(r.err, "error: ordo " + std::string(cmd) + ": --" + name +
                             ": 'abc' is not a number (or not one in its range)\n")
            << cmd << " " << form;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20) << "fewer numeric options than expected were found in the commands' help";
}

// A switch (an option without a value) given one it cannot read says it is a switch, not a number.
TEST(Messages, ASwitchGivenAWordSaysItIsASwitch) {
  for (const auto& [cmd, name, value] : {std::tuple<std::string, std::string, std::string>{"encode", "truncate", "yes"},
                                         {"tokenize", "json", "maybe"},
                                         {"encode", "truncate", "t"}}) {
    const test::Run r = run_ordo(cmd + " --" + name + "=" + value + " hi");
    EXPECT_EQ(r.status, 2) << cmd << " --" << name << "=" << value << ": " << r.err;
    EXPECT_EQ(r.err, "error: ordo " + cmd + ": --" + name + ": '" + value + "' is not true or false (a switch: --" +
                         name + " alone turns it on)\n");
  }
  EXPECT_EQ(run_ordo("encode --truncate=false hi").status, 0) << "true and false are read";
}

// `ordo info` says how long the texts the model was trained on were (the default model: 32 pieces,
// docs/model.md), and that a model without training.json does not say.
TEST(Messages, InfoShowsTheTrainingLength) {
  auto r = run_ordo("info" + kModel);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\ntrained on  texts of at most 32 pieces (training.json); longer ones run, at positions it "
                       "never saw\n"),
            std::string::npos)
      << r.out;
  test::TempDir dir;
  std::ofstream(dir.path + "/c.json") << R"({"vocab_size": 8000, "d_model": 4, "n_heads": 1, "d_ff": 4,
    "n_layers": 1, "positional_encoding": "none"})";
  ASSERT_EQ(run_ordo("init --config " + dir.path + "/c.json --out " + dir.path + "/m --tokenizer " +
                     ORDO_DEFAULT_MODEL + "/tokenizer.model")
                .status,
            0);
  r = run_ordo("info --model " + dir.path + "/m");
  EXPECT_NE(r.out.find("\ntrained on  texts of a length not recorded (no training.json with max_len)\n"),
            std::string::npos)
      << r.out;
}

// A text with a newline in it, as JSON lines and as NUL-ended records: the same pieces and the
// same vector as the text given as one argument.
TEST(Input, JsonLinesAndNulRecordsHoldTextsWithNewlines) {
  const std::string two_lines = "the cat\nsat on the mat";
  const auto want = json_lines(run_ordo("tokenize --json " + quote(two_lines)).out);
  const auto want_vec = json_lines(run_ordo("encode --json" + kModel + quote(two_lines)).out);
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(want_vec.size(), 1u);
  const std::string jsonl = "{\"text\": \"the cat\\nsat on the mat\"}\n{\"text\": \"hello\", \"id\": 7}\n";
  const std::string nul = std::string("the cat\nsat on the mat") + '\0' + "hello" + '\0';
  for (const auto& [format, input] : {std::pair<std::string, std::string>{"jsonl", jsonl}, {"nul", nul}}) {
    SCOPED_TRACE(format);
    auto r = run_ordo("tokenize --json --input-format " + format, input);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = json_lines(r.out);
    ASSERT_EQ(got.size(), 2u) << r.out;
    EXPECT_EQ(got[0]["text"], two_lines);
    EXPECT_EQ(got[0]["pieces"], want[0]["pieces"]);
    EXPECT_EQ(got[1]["text"], "hello");
    r = run_ordo("encode --json --input-format " + format + kModel, input);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto vec = json_lines(r.out);
    ASSERT_EQ(vec.size(), 2u) << r.out;
    ASSERT_EQ(vec[0]["embedding"].size(), want_vec[0]["embedding"].size());
    for (size_t i = 0; i < vec[0]["embedding"].size(); ++i)  // batched with another text: rounding apart
      EXPECT_NEAR(vec[0]["embedding"][i].get<double>(), want_vec[0]["embedding"][i].get<double>(), 1e-5) << i;
  }
  // A line that is not such an object is named, and stops the command after the lines before it.
  auto r = run_ordo("tokenize --input-format jsonl", "{\"text\": \"a\"}\n[\"b\"]\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "error: stdin: line 2: is not a JSON object with a \"text\" string (--input-format jsonl), e.g. "
            "{\"text\": \"the cat\"}\n");
  r = run_ordo("score --input-format nul" + kModel, std::string("the cat") + '\0' + std::string(3, '\xff'));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("stdin: record 2: "), std::string::npos) << r.err;
  r = run_ordo("encode --input-format jsonl hello");
  EXPECT_EQ(r.err,
            "error: ordo encode: --input-format jsonl is for --input FILE or stdin, not for texts given as "
            "arguments\n");
  r = run_ordo("encode --input-format csv");
  EXPECT_EQ(r.err, "error: ordo encode: --input-format must be lines, jsonl or nul, got \"csv\"\n");
}

// A PLL compares orders of the same pieces: texts of other pieces (the empty text, which scores 0,
// or other words) get a line saying their PLLs do not rank them; orders of the same pieces do not.
TEST(Meaning, ScoreSaysNothingOfPreferenceAcrossDifferentPieces) {
  const std::string note =
      "(these texts are not all made of the same pieces, so their PLLs do not say which is more natural: a PLL "
      "compares orders of the same pieces)\n";
  auto r = run_ordo("score" + kModel + "'' 'the cat'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
  r = run_ordo("score" + kModel + "'the cat sat on the mat' 'the dog sat on the mat'");
  EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
  r = run_ordo("score" + kModel + "'the cat sat on the mat' 'the mat sat on the cat'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("not all made of the same pieces"), std::string::npos) << r.out;
}

// compare on texts of different pieces states no preference, in its text and its JSON (and so on
// the live page, which shows the verdict).
TEST(Meaning, CompareStatesNoPreferenceAcrossDifferentPieces) {
  for (const std::string& ab : {std::string("'' 'the cat'"), std::string("'the cat sat' 'the dog sat'")}) {
    SCOPED_TRACE(ab);
    const auto r = run_ordo("compare --json" + kModel + ab);
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["prefers"], "neither");
    EXPECT_NE(j["verdict"].get<std::string>().find("so their PLLs (A "), std::string::npos) << j["verdict"];
    EXPECT_NE(j["verdict"].get<std::string>().find(") do not say which is more natural: a PLL compares orders of "
                                                   "the same pieces."),
              std::string::npos)
        << j["verdict"];
    const auto text = run_ordo("compare" + kModel + ab);
    EXPECT_EQ(text.out.find("prefers"), std::string::npos) << text.out;
  }
}

// --skip-bad with npy: a bad line keeps its row, of NaN (as an empty line), so row i is line i.
TEST(Output, SkipBadKeepsANanRowInNpy) {
  test::TempDir dir;
  std::ofstream(dir.path + "/in.txt", std::ios::binary) << "the cat\nbad \xC3\x28 line\n\nthe mat\n";
  const auto r = run_ordo("encode --format npy --skip-bad --output " + dir.path + "/v.npy" + kModel + "--input " +
                          dir.path + "/in.txt");
  EXPECT_EQ(r.status, 2) << r.err;  // the summary of what was skipped
  const std::string npy = test::read_file(dir.path + "/v.npy");
  ASSERT_GT(npy.size(), 10u);
  const size_t header = 10 + size_t(uint8_t(npy[8])) + 256 * size_t(uint8_t(npy[9]));
  EXPECT_NE(npy.substr(0, header).find("'shape': (4, 64)"), std::string::npos) << npy.substr(0, header);
  ASSERT_EQ(npy.size(), header + 4 * 64 * 4);
  const float* v = reinterpret_cast<const float*>(npy.data() + header);
  for (int row = 0; row < 4; ++row) {
    const bool nan = std::isnan(v[row * 64]) && std::isnan(v[row * 64 + 63]);
    EXPECT_EQ(nan, row == 1 || row == 2) << "row " << row;
  }
}

// Texts longer than the model's training length (32 pieces for the default model) are encoded, and
// counted in one note naming the first few.
TEST(Output, TextsPastTheTrainingLengthAreCounted) {
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "cat ";
  const auto r = run_ordo("encode --json" + kModel + "'the cat' " + quote(long_text) + " " + quote(long_text));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).size(), 3u);
  EXPECT_EQ(r.err,
            "note: arguments: 2 texts are longer than the 32 pieces the model was trained on (argument 2, argument "
            "3): encoded all the same, at positions it never saw (ordo info; docs/model.md)\n");
}

// Standard input is answered a line at a time: the first line's output comes before the second line
// is written (the writer waits for it; `timeout` only keeps a hang from stalling the suite).
TEST(Input, StandardInputIsAnsweredLineByLine) {
  for (const std::string& cmd : {std::string("tokenize --json"), "encode --json" + kModel, "score --json" + kModel}) {
    SCOPED_TRACE(cmd);
    const std::string script = "coproc timeout 60 " + std::string(ORDO_BINARY) + " " + cmd +
                               "\n"
                               "exec {out}<&${COPROC[0]} {in}>&${COPROC[1]}\n"
                               "echo 'the cat' >&$in\n"
                               "if read -r -t 30 first <&$out; then echo \"first: ${first:0:1}\"; "
                               "else echo 'no line before the second was written'; fi\n"
                               "echo 'the mat' >&$in; exec {in}>&- {COPROC[1]}>&-\n"
                               "cat <&$out | wc -l\n";
    const auto r = run_shell(script);
    EXPECT_EQ(r.out, "first: {\n1\n") << r.out;
  }
}

}  // namespace
}  // namespace ordo
