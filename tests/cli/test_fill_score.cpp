// ordo fill, ordo score and compare's scores, end to end: the JSON each prints (keys in the
// documented order), what positions change and what they cannot, and the errors. On a random
// model with a head (ordo init) and the default tokenizer, so that the properties hold for any
// weights; what the trained default model answers is tested in test_trained.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace test::cli;

class FillScore : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const std::string tok = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";
    const std::string sizes = R"("vocab_size": 8000, "d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 2,
                                 "final_norm": true, )";
    const std::pair<std::string, std::string> models[] = {
        {"head", R"("positional_encoding": "sinusoidal", "head": "mlm")"},
        {"plain", R"("positional_encoding": "sinusoidal")"},
        {"nope", R"("positional_encoding": "none", "head": "mlm")"}};
    for (const auto& [name, rest] : models) {
      const std::string cfg = dir_->path + "/" + name + ".json";
      std::ofstream(cfg) << "{" << sizes << rest << "}";
      const auto r = run_ordo("init --seed 5 --config " + quote(cfg) + " --out " + quote(dir_->path + "/" + name) +
                              " --tokenizer " + quote(tok));
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string model(const std::string& name) { return " --model " + quote(dir_->path + "/" + name) + " "; }
  static test::TempDir* dir_;
};
test::TempDir* FillScore::dir_ = nullptr;

TEST_F(FillScore, FillJsonKeysInTheDocumentedOrder) {
  const auto r = run_ordo("fill --json --top 3" + model("head") + quote("the cat sat on the <mask>."));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("{\"text\":\"the cat sat on the <mask>.\",\"pieces\":[", 0), 0u) << r.out;
  const size_t ids = r.out.find(",\"ids\":["), masks = r.out.find(",\"masks\":[{\"position\":5,\"top\":[{\"piece\":");
  EXPECT_NE(ids, std::string::npos) << r.out;
  EXPECT_NE(masks, std::string::npos) << r.out;
  EXPECT_LT(ids, masks);
  EXPECT_NE(r.out.find("\",\"id\":"), std::string::npos);
  EXPECT_NE(r.out.find(",\"prob\":"), std::string::npos);
  const json j = json::parse(r.out);
  ASSERT_EQ(j["masks"].size(), 1u);
  EXPECT_EQ(j["pieces"][5], "<mask>");
  EXPECT_EQ(j["pieces"][6], ".") << "a full stop glued to the marker is the piece '.', as in 'mat.'";
  const json& top = j["masks"][0]["top"];
  ASSERT_EQ(top.size(), 3u);
  for (size_t k = 1; k < 3; ++k) EXPECT_GE(top[k - 1]["prob"].get<double>(), top[k]["prob"].get<double>());
}

// --words: the highest-scoring pieces that start a word, each with its probability over the whole
// vocabulary (softmax of the raw logits --logits prints), in order.
TEST_F(FillScore, FillWordsKeepsWordStartPiecesWithTheirOwnProbability) {
  const std::string text = quote("the cat <mask> on the mat");
  const auto w = run_ordo("fill --json --words --top 8" + model("head") + text);
  const auto all = run_ordo("fill --json --logits --top 1" + model("head") + text);
  ASSERT_EQ(w.status + all.status, 0) << w.err << all.err;
  const json top = json::parse(w.out)["masks"][0]["top"];
  const json z = json::parse(all.out)["masks"][0]["logits"];
  ASSERT_EQ(top.size(), 8u);
  double zmax = -1e300, sum = 0;
  for (const auto& v : z) zmax = std::max(zmax, v.get<double>());
  for (const auto& v : z) sum += std::exp(v.get<double>() - zmax);
  const std::string word_start = "\u2581";
  for (size_t k = 0; k < top.size(); ++k) {
    const std::string piece = top[k]["piece"];
    EXPECT_EQ(piece.rfind(word_start, 0), 0u) << piece;
    EXPECT_GT(piece.size(), word_start.size()) << "the lone word-start piece is not a word";
    const double p = std::exp(z[top[k]["id"].get<int>()].get<double>() - zmax) / sum;
    EXPECT_NEAR(top[k]["prob"].get<double>(), p, 1e-6 * std::max(1.0, p * 1e3));
    if (k) {
      EXPECT_GE(top[k - 1]["prob"].get<double>(), top[k]["prob"].get<double>());
    }
  }
}

TEST_F(FillScore, FillTextOutputListsEachMask) {
  const auto r = run_ordo("fill --top 2" + model("head") + quote("<mask> cat <mask> on the mat"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pieces: <mask> \u2581cat <mask> \u2581on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<mask> 1 of 2 (piece 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<mask> 2 of 2 (piece 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("%"), std::string::npos);
}

// The same pieces with the <mask> in another place: another question with positions, the same one
// (to the last digit) without them.
TEST_F(FillScore, MovingTheMaskChangesThePredictionOnlyWithPositions) {
  auto top_of = [&](const std::string& text, const std::string& flags) {
    const auto r = run_ordo("fill --json --top 10" + flags + model("head") + quote(text));
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out)["masks"][0]["top"];
  };
  const char* a = "<mask> the cat sat on the mat";
  const char* b = "the cat sat on the mat <mask>";
  const char* c = "the cat sat <mask> on the mat";
  EXPECT_NE(top_of(a, ""), top_of(b, ""));
  EXPECT_NE(top_of(a, ""), top_of(c, ""));
  EXPECT_EQ(top_of(a, " --no-pe"), top_of(b, " --no-pe"));
  EXPECT_EQ(top_of(a, " --no-pe"), top_of(c, " --no-pe"));
}

// Scoring S pieces costs S passes of S pieces (S^3): a text past --max-tokens (512 by default) is
// one error naming the option, before any work; --max-tokens raises it; compare leaves its
// pseudo-log-likelihood out for such texts and says why.
TEST_F(FillScore, ScoreHasAStatedLimit) {
  std::string text;
  for (int i = 0; i < 520; ++i) text += "cat ";  // ▁cat each: 520 pieces
  auto r = run_ordo("score" + model("head") + quote(text));
  test::expect_one_error(r,
                         "argument 1: text has 520 pieces, more than --max-tokens 512 (scoring S pieces costs S "
                         "passes of S pieces, growing with S^3");
  r = run_ordo("score --max-tokens 520 --json" + model("head") + quote(text));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::json_lines(r.out)[0]["log_probs"].size(), 520u);
  r = run_ordo("compare" + model("head") + quote(text) + " " + quote(text + "cat"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(no pseudo-log-likelihood: a text has more than 512 pieces"), std::string::npos) << r.out;
}

// A tokenizer whose <mask> is a USER_DEFINED piece (matched in text, as some converted tokenizers have
// it) instead of a control one: fill finds the mask by its id and answers as with the control piece;
// score refuses a text that holds the mask piece by name, instead of scoring it as a word.
TEST_F(FillScore, AUserDefinedMaskPieceIsTheMask) {
  const std::string m = dir_->path + "/userdef";
  ASSERT_EQ(std::system(("rm -rf " + quote(m) + " && cp -r " + quote(dir_->path + "/head") + " " + quote(m)).c_str()),
            0);
  std::string tok = test::read_file(m + "/tokenizer.model");
  const std::string control("\x0a\x06<mask>\x15\x00\x00\x00\x00\x18\x03", 15);
  const size_t at = tok.find(control);
  ASSERT_NE(at, std::string::npos);
  tok[at + 14] = 4;  // type USER_DEFINED
  std::ofstream(m + "/tokenizer.model", std::ios::binary) << tok;
  const auto mine = run_ordo("tokenize --json" + model("userdef") + quote("the <mask> sat"));
  ASSERT_EQ(mine.status, 0) << mine.err;
  EXPECT_NE(mine.out.find("\"<mask>\""), std::string::npos) << "the text's <mask> is the piece: " << mine.out;
  const auto control_fill = run_ordo("fill --json" + model("head") + quote("the <mask> sat on the mat"));
  const auto user_fill = run_ordo("fill --json" + model("userdef") + quote("the <mask> sat on the mat"));
  ASSERT_EQ(user_fill.status, 0) << user_fill.err;
  EXPECT_EQ(user_fill.out, control_fill.out);
  const auto r = run_ordo("score" + model("userdef") + quote("the <mask> sat"));
  test::expect_one_error(r, "argument 1: the text holds <mask>, the model's mask piece (id ");
  EXPECT_EQ(run_ordo("score" + model("userdef") + quote("the cat sat")).status, 0);
}

TEST_F(FillScore, FillErrors) {
  auto check = [](const test::Run& r, const std::string& start) {
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind(start, 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
  };
  check(run_ordo("fill" + model("head") + quote("the cat sat on the mat")), "error: argument 1: holds no <mask>");
  check(run_ordo("fill" + model("plain") + quote("the <mask> sat")),
        "error: " + dir_->path + "/plain/config.json: the model has no masked-language-model head");
  check(run_ordo("fill --top 0" + model("head") + quote("the <mask>")),
        "error: ordo fill: --top must be in 1 .. 16777216, got 0");
  check(run_ordo("fill" + model("head")), "error: ordo fill: needs one text");
  check(run_ordo("fill" + model("head") + quote("caf\xc3 <mask>")), "error: argument 1: invalid UTF-8");
}

TEST_F(FillScore, ScoreJsonOneObjectPerTextInInputOrder) {
  const auto r = run_ordo("score --json" + model("head") + quote("the cat sat on the mat") + " " +
                          quote("caf\xc3\xa9, the <mask>") + " " + quote(""));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("{\"text\":\"the cat sat on the mat\",\"pieces\":[", 0), 0u) << r.out;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["text"], "caf\xc3\xa9, the <mask>");
  for (const json& j : lines) {
    EXPECT_EQ(j["pieces"].size(), j["ids"].size());
    EXPECT_EQ(j["log_probs"].size(), j["ids"].size());
    double sum = 0;
    for (const json& lp : j["log_probs"]) {
      EXPECT_LT(lp.get<double>(), 0.0);
      sum += lp.get<double>();
    }
    EXPECT_NEAR(j["pll"].get<double>(), sum, 1e-9 * std::max(1.0, std::fabs(sum)));
  }
  EXPECT_EQ(lines[2]["pll"], 0.0);
  // "<mask>" in a text to score is ordinary text: no id of it is the mask piece.
  for (const json& p : lines[1]["pieces"]) EXPECT_NE(p, "<mask>");
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const size_t t = line.find("\"text\":"), p = line.find(",\"pieces\":"), i = line.find(",\"ids\":"),
                 l = line.find(",\"pll\":"), lp = line.find(",\"log_probs\":");
    EXPECT_TRUE(t < p && p < i && i < l && l < lp && lp != std::string::npos) << line;
  }
}

TEST_F(FillScore, ScoreOfSeveralTextsIsEachTextsOwnAndReadsInput) {
  const std::string a = "the cat sat on the mat", b = "a small boat crossed the quiet lake";
  const auto both = run_ordo("score --json" + model("head") + quote(a) + " " + quote(b));
  const auto one = run_ordo("score --json" + model("head") + quote(a));
  const auto two = run_ordo("score --json" + model("head") + quote(b));
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.out, one.out + two.out);
  const auto piped = run_ordo("score --json --input -" + model("head"), a + "\n" + b + "\n");
  EXPECT_EQ(piped.out, both.out);
  test::TempDir d;
  std::ofstream(d.path + "/in.txt") << a << "\r\n" << b;
  const auto file = run_ordo("score --json --input " + quote(d.path + "/in.txt") + model("head"));
  EXPECT_EQ(file.out, both.out);
}

// Without positions the encoder sees the pieces as a bag: every order scores the same, exactly.
TEST_F(FillScore, ScoreWithoutPositionsTiesEveryOrder) {
  const std::string texts = quote("the cat sat on the mat") + " " + quote("the mat sat on the cat") + " " +
                            quote("mat the on sat cat the") + " " + quote("on the mat the cat sat");
  for (const std::string& run : {"score --json --no-pe" + model("head"), "score --json" + model("nope")}) {
    const auto r = run_ordo(run + texts);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 4u);
    for (size_t i = 1; i < 4; ++i) EXPECT_EQ(lines[i]["pll"], lines[0]["pll"]) << run << ": text " << i;
  }
  const auto lines = json_lines(run_ordo("score --json" + model("head") + texts).out);
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i = 1; i < 4; ++i) EXPECT_NE(lines[i]["pll"], lines[0]["pll"]) << "with positions, text " << i;
}

// Input streams as `ordo encode`'s does: the lines before a bad one are scored and printed, the bad
// one stops the run with one error line, and nothing after it is read.
TEST_F(FillScore, ScoreStopsAtTheFirstBadLineAfterPrintingTheOnesBefore) {
  test::TempDir d;
  std::ofstream(d.path + "/in.txt") << "the cat sat\nbad \xff line\nthe dog ran\n";
  const auto r = run_ordo("score --json --input " + quote(d.path + "/in.txt") + model("head"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + d.path + "/in.txt: line 2: invalid UTF-8 at byte 4\n");
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0]["text"], "the cat sat");
  const auto no_head = run_ordo("score" + model("plain") + quote("the cat"));
  EXPECT_EQ(no_head.status, 2);
  EXPECT_EQ(no_head.err.rfind("error: " + dir_->path + "/plain/config.json: the model has no", 0), 0u) << no_head.err;
  const auto both = run_ordo("score --input -" + model("head") + quote("the cat"));
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(
      both.err,
      "error: ordo score: give texts as arguments or --input FILE, not both (the file's lines would be ignored)\n");
}

TEST_F(FillScore, CompareAddsTheScoresWhenTheModelHasAHead) {
  const std::string ab = quote("the cat sat on the mat") + " " + quote("the mat sat on the cat");
  const auto r = run_ordo("compare --json" + model("head") + ab);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const json score = json_lines(run_ordo("score --json" + model("head") + ab).out).at(0)["pll"];  // A with positions
  const json nope = json_lines(run_ordo("score --json --no-pe" + model("head") + ab).out).at(0)["pll"];
  EXPECT_EQ(j["pll"]["a"]["with_pe"], score);
  EXPECT_EQ(j["pll"]["a"]["without_pe"], nope);
  EXPECT_EQ(j["pll"]["a"]["without_pe"], j["pll"]["b"]["without_pe"]) << "no positions, no order";
  const double a = j["pll"]["a"]["with_pe"], b = j["pll"]["b"]["with_pe"];
  EXPECT_EQ(j["prefers"], a > b ? "a" : "b");
  const std::string verdict = j["verdict"];
  EXPECT_NE(verdict.find(a > b ? "finds A's order more natural" : "finds B's order more natural"), std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find("cannot prefer either order"), std::string::npos) << verdict;

  const auto text = run_ordo("compare" + model("head") + ab);
  EXPECT_NE(text.out.find("pseudo-log-likelihood"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(verdict), std::string::npos) << text.out;

  const auto none = run_ordo("compare --json" + model("nope") + ab);
  const json n = json::parse(none.out);
  EXPECT_EQ(n["prefers"], "neither");
  EXPECT_NE(n["verdict"].get<std::string>().find("no positional encoding, so it cannot prefer either order"),
            std::string::npos);

  const auto plain = run_ordo("compare --json" + model("plain") + ab);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_FALSE(json::parse(plain.out).contains("pll")) << "a model without a head compares as before";
}

TEST_F(FillScore, InfoSaysWhetherTheModelHasAHead) {
  const auto head = run_ordo("info" + model("head")), plain = run_ordo("info" + model("plain"));
  ASSERT_EQ(head.status, 0) << head.err;
  EXPECT_NE(head.out.find("head        masked-language-model: logits = h E^T + head.bias"), std::string::npos)
      << head.out;
  EXPECT_NE(plain.out.find("head        none"), std::string::npos) << plain.out;
}

}  // namespace
}  // namespace ordo
