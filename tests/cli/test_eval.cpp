// `ordo eval` end to end, on the committed models and held-out lines.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "paths.h"
#include "teach/png_read.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::expect_one_error;

using nlohmann::json;
using test::quote;
using test::run_ordo;

const std::string kModels = std::string(ORDO_SOURCE_DIR) + "/models/";

// The first n held-out lines, as a file in `dir`.
std::string heldout_slice(const test::TempDir& dir, size_t n, const std::string& which = "wordnet-heldout.txt") {
  std::ifstream in(kModels + "heldout/" + which);
  const std::string path = dir.path + "/" + which;
  std::ofstream out(path);
  size_t k = 0;
  for (std::string line; k < n && std::getline(in, line); ++k) out << line << "\n";
  return path;
}

TEST(Eval, ThreeModelsAsJson) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 300);
  const auto r = run_ordo("eval --json --model " + kModels + "default --model " + kModels +
                          "position-learned --model " + kModels + "position-none --input " + quote(input));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["lines"], 300);
  ASSERT_EQ(j["models"].size(), 3u);
  for (const json& m : j["models"]) {
    SCOPED_TRACE(m["model"].get<std::string>());
    EXPECT_EQ(m["lines"].get<int>() + m["left_out"].get<int>() + m["empty"].get<int>(), 300);
    EXPECT_GT(m["masked"].get<int>(), 300);
    EXPECT_GE(m["top5_hits"].get<int>(), m["top1_hits"].get<int>());
    long bucketed = 0;
    for (const json& b : m["buckets"]) bucketed += b["masked"].get<long>();
    EXPECT_EQ(bucketed, m["masked"].get<long>());
    for (const char* test : {"shuffle", "swap"}) {
      const json& o = m["order"][test];
      EXPECT_EQ(o["preferred"].get<int>() + o["ties"].get<int>() + o["other"].get<int>(), o["lines"].get<int>());
      EXPECT_GT(o["lines"].get<int>(), 100);
    }
  }
  const json &sinusoidal = j["models"][0], &learned = j["models"][1], &none = j["models"][2];
  EXPECT_EQ(sinusoidal["left_out"], 0);
  EXPECT_EQ(learned["position_limit"], 32);
  EXPECT_EQ(none["left_out"], 0);
  // Without positions every order pair is an exact tie: the same score to the last bit.
  for (const char* test : {"shuffle", "swap"}) {
    EXPECT_EQ(none["order"][test]["ties"], none["order"][test]["lines"]) << test;
    EXPECT_EQ(none["order"][test]["max_abs_difference"].get<double>(), 0.0) << test;
    EXPECT_GT(sinusoidal["order"][test]["preferred_share"].get<double>(), 0.8) << test;
    EXPECT_GT(learned["order"][test]["preferred_share"].get<double>(), 0.8) << test;
  }
}

TEST(Eval, WithoutPositionsTheSinusoidalModelTiesToo) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 200);
  const auto r = run_ordo("eval --json --no-pe --model " + kModels + "default --input " + quote(input));
  ASSERT_EQ(r.status, 0) << r.err;
  const json m = json::parse(r.out)["models"][0];
  for (const char* test : {"shuffle", "swap"}) {
    EXPECT_GT(m["order"][test]["lines"].get<int>(), 50);
    EXPECT_EQ(m["order"][test]["ties"], m["order"][test]["lines"]) << test;
  }
}

TEST(Eval, LongTextsByPositionAndTheLearnedTableLeavesThemOut) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 20, "wordnet-heldout-long.txt");
  const auto r = run_ordo("eval --json --model " + kModels + "default --model " + kModels +
                          "position-learned --input " + quote(input));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const json &sinusoidal = j["models"][0], &learned = j["models"][1];
  EXPECT_EQ(learned["left_out"], 20);  // every long text is past its 32 rows: counted, not cut
  EXPECT_EQ(learned["masked"], 0);
  EXPECT_EQ(learned["buckets"].size(), 0u);
  EXPECT_EQ(sinusoidal["left_out"], 0);
  ASSERT_GE(sinusoidal["buckets"].size(), 3u);
  EXPECT_EQ(sinusoidal["buckets"][1]["from"], 32);
  EXPECT_EQ(sinusoidal["buckets"][1]["to"], 63);
  EXPECT_EQ(sinusoidal["order"]["lines"], 0);  // no line of 5-20 pieces here

  const auto text = run_ordo("eval --model " + kModels + "position-learned --input " + quote(input));
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("20 of 20 lines left out: longer than its 32 learned positions"), std::string::npos)
      << text.out;
}

TEST(Eval, ChartIsWritten) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 10, "wordnet-heldout-long.txt");
  const auto r = run_ordo("eval --model " + kModels + "default --model " + kModels + "position-none --input " +
                          quote(input) + " --png " + quote(dir.path + "/chart.png"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto png = test::read_png(dir.path + "/chart.png");
  EXPECT_GT(png.width, 300);
  EXPECT_GT(png.height, 200);
  EXPECT_NE(r.out.find("training length 32 marked"), std::string::npos) << r.out;
}

TEST(Eval, BadUseGivesOneErrorLine) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 5);
  expect_one_error(run_ordo("eval --model " + kModels + "default"), "--input");
  expect_one_error(run_ordo("eval --model " + kModels + "default --input " + dir.path + "/nowhere.txt"),
                   dir.path + "/nowhere.txt: cannot open");
  // A model without a masked-language-model head (a corpus case of the head's own tests).
  expect_one_error(run_ordo("eval --model " + std::string(ORDO_SOURCE_DIR) +
                            "/tests/corpus/bad/head_score_without_head --input " + quote(input)),
                   "config.json: the model has no masked-language-model head");
  expect_one_error(run_ordo("eval --max-pieces -1 --model " + kModels + "default --input " + quote(input)),
                   "--max-pieces");
  // A picture name that is neither .png nor .svg fails before any work.
  expect_one_error(run_ordo("eval --model " + kModels + "default --input " + quote(input) + " --png " +
                            quote(dir.path + "/chart.bmp")),
                   "chart.bmp");
  // Invalid UTF-8 names the file and line.
  std::ofstream(dir.path + "/bad.txt") << "a fine line\nbad \xff byte\n";
  expect_one_error(run_ordo("eval --model " + kModels + "default --input " + quote(dir.path + "/bad.txt")),
                   "bad.txt: line 2");
}

// --offset: the same lines from another first position. Rope and alibi see only offsets i − j, so the
// counts stay; the sinusoids move; a learned table leaves out the lines the shift pushes past it.
TEST(Eval, OffsetMovesOnlyAbsolutePositions) {
  test::TempDir dir;
  const std::string input = heldout_slice(dir, 120);
  const std::string tok = quote(kModels + "default/tokenizer.model");
  auto counts = [&](const std::string& model, int offset) {
    const auto r = run_ordo("eval --json --model " + quote(model) + " --offset " + std::to_string(offset) +
                            " --input " + quote(input));
    EXPECT_EQ(r.status, 0) << r.err;
    const json m = json::parse(r.out)["models"][0];
    return std::vector<long>{m["masked"].get<long>(), m["top1_hits"].get<long>(), m["top5_hits"].get<long>(),
                             m["order"]["swap"]["preferred"].get<long>()};
  };
  for (const char* p : {"rope", "alibi", "alibi-symmetric"}) {
    const std::string cfg = dir.path + "/" + p + ".json", model = dir.path + "/" + p;
    std::ofstream(cfg) << R"({"vocab_size": 8000, "d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 2, )"
                       << R"("final_norm": true, "head": "mlm", "positional_encoding": ")" << p << "\"}";
    ASSERT_EQ(
        run_ordo("init --seed 3 --config " + quote(cfg) + " --out " + quote(model) + " --tokenizer " + tok).status, 0);
    EXPECT_EQ(counts(model, 0), counts(model, 40)) << p;
  }
  EXPECT_NE(counts(kModels + "default", 0), counts(kModels + "default", 32));
  const auto learned =
      run_ordo("eval --json --model " + quote(kModels + "position-learned") + " --offset 30 --input " + quote(input));
  ASSERT_EQ(learned.status, 0) << learned.err;
  const json m = json::parse(learned.out)["models"][0];
  EXPECT_GT(m["left_out"].get<int>(), 0);  // only lines of at most 2 pieces fit rows 30 and 31
  EXPECT_EQ(run_ordo("eval --offset -1 --model " + quote(kModels + "default") + " --input " + quote(input)).status, 2);
}

}  // namespace
}  // namespace ordo
