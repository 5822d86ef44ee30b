// The `ordo` command end to end: the built binary, its JSON, its exit codes and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ordo/engine/encoder.h>

#include "cli/cli_util.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/reduced.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace test::cli;

TEST(Cli, EncodeJsonHasTheFieldsInInputOrder) {
  const auto r = run_ordo("encode --json" + kModel + quote("the cat sat on the mat") + " " + quote("a dog"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["text"], "the cat sat on the mat");
  EXPECT_EQ(lines[1]["text"], "a dog");
  for (const json& j : lines) {
    ASSERT_TRUE(j.contains("pieces") && j.contains("ids") && j.contains("embedding"));
    EXPECT_EQ(j["pieces"].size(), j["ids"].size());
    EXPECT_EQ(j["embedding"].size(), 64u);
  }
}

TEST(Cli, BatchedJsonEqualsOneTextAtATime) {
  const std::vector<std::string> texts = {"the cat sat on the mat", "a", "a chicken wants to eat my sister",
                                          "words in a longer sentence take more positions than the others here"};
  std::string all;
  for (const auto& t : texts) all += " " + quote(t);
  const auto batch = run_ordo("encode --json --pooling none" + kModel + all);
  ASSERT_EQ(batch.status, 0) << batch.err;
  const auto lines = json_lines(batch.out);
  ASSERT_EQ(lines.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto alone = json_lines(run_ordo("encode --json --pooling none" + kModel + quote(texts[i])).out);
    ASSERT_EQ(alone.size(), 1u);
    const json &a = lines[i]["hidden"], &b = alone[0]["hidden"];
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t t = 0; t < a.size(); ++t)
      for (size_t j = 0; j < a[t].size(); ++j)
        worst = std::max(worst, std::fabs(a[t][j].get<double>() - b[t][j].get<double>()));
    EXPECT_LT(worst, 1e-5) << texts[i];
  }
}

TEST(Cli, InputFileAndStdinGiveTheSameAsArguments) {
  test::TempDir dir;
  const std::string file = dir.path + "/texts.txt";
  std::ofstream(file) << "\xEF\xBB\xBFthe cat sat on the mat\r\n\na dog\n";
  const auto from_file = json_lines(run_ordo("encode --json" + kModel + "--input " + file).out);
  const auto from_stdin = json_lines(run_ordo("encode --json" + kModel, "the cat sat on the mat\n\na dog\n").out);
  const auto from_args =
      json_lines(run_ordo("encode --json" + kModel + quote("the cat sat on the mat") + " '' " + quote("a dog")).out);
  ASSERT_EQ(from_file.size(), 3u);
  EXPECT_EQ(from_file, from_args);
  EXPECT_EQ(from_stdin, from_args);
  EXPECT_EQ(from_file[1]["ids"].size(), 0u) << "an empty line is an empty text";
}

TEST(Cli, CompareShowsOrderMattersOnlyWithPositions) {
  const auto r =
      run_ordo("compare --json" + kModel + quote("the cat sat on the mat") + " " + quote("the mat sat on the cat"));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["same_tokens_reordered"].get<bool>());
  EXPECT_NEAR(j["cosine"]["without_pe"].get<double>(), 1.0, 1e-6);
  EXPECT_LT(j["max_abs_diff"]["without_pe"].get<double>(), 1e-5);
  EXPECT_LT(j["cosine"]["with_pe"].get<double>(), 0.9999);
  EXPECT_EQ(j["a"]["pieces"].size(), j["b"]["pieces"].size());
  for (const json& t : j["tokens"]) EXPECT_LT(t["moved_without_pe"].get<double>(), 1e-4) << t["piece"];

  const auto human =
      run_ordo("compare" + kModel + quote("the cat sat on the mat") + " " + quote("the mat sat on the cat"));
  ASSERT_EQ(human.status, 0);
  EXPECT_NE(human.out.find("Same tokens reordered: yes"), std::string::npos);
  EXPECT_NE(human.out.find("the order changes the result"), std::string::npos);
}

TEST(Cli, DifferentTokensAreNotCalledReordered) {
  const auto r = run_ordo("compare --json" + kModel + quote("the cat sat") + " " + quote("a dog ran"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out)["same_tokens_reordered"].get<bool>());
}

// --compute-type: f32 is the default (the same bytes as without the option); bf16 and int8 give
// vectors near f32's (cosine ≥ 0.999, the bound tests/engine/test_reduced.cpp holds the encoder to);
// a name not known is one error line.
TEST(Cli, ComputeTypeKeepsTheVectorsNearF32) {
  const std::string text = quote("the old dog slept by the warm fire");
  expect_one_error(run_ordo("encode --compute-type fp16" + kModel + text),
                   "error: ordo encode: --compute-type must be f32, bf16 or int8, got \"fp16\"");
  const auto plain = run_ordo("encode --json" + kModel + text);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(run_ordo("encode --json --compute-type f32" + kModel + text).out, plain.out);
  const auto f32 = json::parse(plain.out)["embedding"].get<std::vector<double>>();
  for (ComputeType type : {ComputeType::BF16, ComputeType::Int8}) {
    const std::string name = compute_type_name(type);
    const auto r = run_ordo("encode --json --compute-type " + name + kModel + text);
    if (!compute_type_available(type) && !have_onednn()) {  // a build without oneDNN
      expect_one_error(
          r, "error: ordo encode: --compute-type " + name + ": this build has no oneDNN (install libdnnl-dev)");
      continue;
    }
    if (!compute_type_available(type)) {  // bf16 on a CPU without AVX2 (or ORDO_ISA=scalar) and oneDNN's
      expect_one_error(r,
                       "error: ordo encode: --compute-type bf16: needs a CPU with AVX2 and FMA, or with AVX-512 "
                       "(this one has neither, or ORDO_ISA=scalar)");
      continue;
    }
    ASSERT_EQ(r.status, 0) << r.err;
    const auto v = json::parse(r.out)["embedding"].get<std::vector<double>>();
    ASSERT_EQ(v.size(), f32.size());
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < v.size(); ++i) ab += v[i] * f32[i], aa += v[i] * v[i], bb += f32[i] * f32[i];
    EXPECT_GE(ab / std::sqrt(aa * bb), 0.999) << name;
    EXPECT_NE(r.out, plain.out) << name << " should change the last digits at least";
  }
}

TEST(Cli, BadModelsGiveOneErrorLineAndExitTwo) {
  test::TempDir dir;
  expect_one_error(run_ordo("encode --model " + dir.path + "/nowhere hello"),
                   dir.path + "/nowhere: no such model directory");

  const std::string m = dir.path + "/m";
  ASSERT_EQ(std::system(("cp -r " + std::string(ORDO_DEFAULT_MODEL) + " " + m).c_str()), 0);
  std::ofstream(m + "/config.json") << "{\"vocab_size\": 8000, \"d_model\": 64,,}";
  expect_one_error(run_ordo("encode --model " + m + " hello"), m + "/config.json: not valid JSON");

  ASSERT_EQ(std::system(("cp " + std::string(ORDO_DEFAULT_MODEL) + "/config.json " + m + "/").c_str()), 0);
  ASSERT_EQ(std::system(("truncate -s 100000 " + m + "/model.safetensors").c_str()), 0);
  expect_one_error(run_ordo("encode --model " + m + " hello"), m + "/model.safetensors: ");

  ASSERT_EQ(std::system(("truncate -s 5 " + m + "/model.safetensors").c_str()), 0);
  expect_one_error(run_ordo("encode --model " + m + " hello"), "too short");
}

TEST(Cli, BadTextAndUsage) {
  expect_one_error(run_ordo("encode" + kModel, std::string("bad \xff byte\nok\n")), "stdin: line 1: invalid UTF-8");
  // The lines before a bad one are printed (input is encoded as it is read); nothing after it.
  const auto stopped = run_ordo("encode --json" + kModel, std::string("ok\nbad \xff byte\nok too\n"));
  EXPECT_EQ(stopped.status, 2);
  EXPECT_EQ(stopped.err, "error: stdin: line 2: invalid UTF-8 at byte 4\n");
  EXPECT_EQ(test::count_lines(stopped.out), 1);
  EXPECT_EQ(json::parse(stopped.out)["text"], "ok");
  expect_one_error(run_ordo("encode --pooling maximum" + kModel + "x"), "--pooling");
  expect_one_error(run_ordo("compare" + kModel + "onlyone"), "two texts");
  expect_one_error(run_ordo("frobnicate"), "unknown command");
  expect_one_error(run_ordo("encode --max-tokens 3" + kModel + quote("the cat sat on the mat")), "--max-tokens 3");
  const auto cut = run_ordo("encode --json --max-tokens 3 --truncate" + kModel + quote("the cat sat on the mat"));
  ASSERT_EQ(cut.status, 0) << cut.err;
  EXPECT_EQ(json::parse(cut.out)["ids"].size(), 3u);
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"encode", "compare", "pe", "init", "info"}) {
    const auto r = run_ordo(std::string(cmd) + " --help");
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd;
  }
}

TEST(Cli, InitIsDeterministicAndInfoReadsIt) {
  test::TempDir dir;
  const std::string cfg = std::string(ORDO_SOURCE_DIR) + "/models/default/config.json";
  const std::string tok = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";
  ASSERT_EQ(run_ordo("init --config " + cfg + " --seed 5 --out " + dir.path + "/a --tokenizer " + tok).status, 0);
  ASSERT_EQ(run_ordo("init --config " + cfg + " --seed 5 --out " + dir.path + "/b --tokenizer " + tok).status, 0);
  EXPECT_EQ(std::system(("cmp -s " + dir.path + "/a/model.safetensors " + dir.path + "/b/model.safetensors").c_str()),
            0);
  const auto info = run_ordo("info --model " + dir.path + "/a");
  ASSERT_EQ(info.status, 0) << info.err;
  // 8000·64 + 2 layers · (3·64·64 + 3·64 + 64·64 + 64 + 256·64 + 256 + 64·256 + 64 + 4·64) = 611968,
  // + the final norm 2·64 + the head's bias 8000
  EXPECT_NE(info.out.find("parameters  620096 "), std::string::npos) << info.out;
}

TEST(Cli, PeTableAndCsv) {
  test::TempDir dir;
  const auto r = run_ordo("pe --positions 3 --dim 4 --csv " + dir.path + "/pe.csv");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream csv(dir.path + "/pe.csv");
  std::string header, row0, row1;
  std::getline(csv, header);
  std::getline(csv, row0);
  std::getline(csv, row1);
  EXPECT_EQ(header, "position,d0,d1,d2,d3");
  EXPECT_EQ(row0, "0,0,1,0,1");
  EXPECT_EQ(row1, "1,0.841470957,0.540302277,0.00999983307,0.999949992");
}

// `ordo pe --model` for ALiBi: each head's slope behind the query and ahead of it, and the bias they
// give at offsets j − i = −3 .. 3 (alibi: head 0 sees back with m_0, −inf ahead; alibi-symmetric: m_h
// both ways).
TEST(Cli, PeModelShowsBothAlibiSlopes) {
  test::TempDir dir;
  const std::string tok = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";
  const std::vector<std::pair<std::string, std::vector<std::string>>> want = {
      {"alibi", {"0", "0.25", "inf", "-0.7500", "-0.5000", "-0.2500", "0.0000", "-inf", "-inf", "-inf"}},
      {"alibi-symmetric",
       {"0", "0.25", "0.25", "-0.7500", "-0.5000", "-0.2500", "0.0000", "-0.2500", "-0.5000", "-0.7500"}}};
  for (const auto& [pe, head0] : want) {
    const std::string cfg = dir.path + "/" + pe + ".json", model = dir.path + "/" + pe;
    std::ofstream(cfg) << R"({"vocab_size": 8000, "d_model": 32, "n_heads": 4, "d_ff": 64, "n_layers": 1, )"
                       << R"("positional_encoding": ")" << pe << "\"}";
    ASSERT_EQ(run_ordo("init --seed 3 --config " + cfg + " --out " + model + " --tokenizer " + tok).status, 0);
    const auto r = run_ordo("pe --positions 4 --model " + model);
    ASSERT_EQ(r.status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    bool found = false;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::vector<std::string> row{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
      if (row.empty() || row[0] != "0") continue;
      found = true;
      EXPECT_EQ(row, head0) << pe << "\n" << r.out;
    }
    EXPECT_TRUE(found) << pe << ": no row for head 0\n" << r.out;
    EXPECT_NE(r.out.find("changes no score q.k/sqrt(dh) + b_ij: holds"), std::string::npos) << r.out;
  }
}

// cxxopts splits a vector value at commas by default; a text with a comma must stay one text.
TEST(Cli, TextWithCommasIsOneText) {
  const auto r =
      run_ordo("encode --json" + kModel + quote("Hello there, this is one text, not three") + " " + quote("a, b"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["text"], "Hello there, this is one text, not three");
  EXPECT_EQ(lines[1]["text"], "a, b");
}

// The kernels' level (engine/kernels/cpu.h): `ordo info` names the CPU's features and the kernels
// chosen, ORDO_ISA forces a lower level, and an unknown level, or one the CPU lacks, is one line.
TEST(Cli, InfoNamesTheKernelsAndOrdoIsaForcesALevel) {
  const char* before = std::getenv("ORDO_ISA");
  const std::string saved = before ? before : "";
  ::unsetenv("ORDO_ISA");
  auto r = run_ordo("info" + kModel);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\ncpu         "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::string("\nkernels     level ") + isa_name(highest_isa()) + " "), std::string::npos)
      << r.out;
  ::setenv("ORDO_ISA", "scalar", 1);
  r = run_ordo("info" + kModel);
  EXPECT_NE(r.out.find("\nkernels     level scalar "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32 products: OpenBLAS's sgemm\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8 products: plain loop (exact)\n"), std::string::npos) << r.out;
  ::setenv("ORDO_ISA", "avx9", 1);
  expect_one_error(run_ordo("info" + kModel), "error: ORDO_ISA=avx9: must be scalar, avx2 or avx512");
  if (highest_isa() != Isa::Avx512) {
    ::setenv("ORDO_ISA", "avx512", 1);
    expect_one_error(run_ordo("encode" + kModel + "cat"),
                     "error: ORDO_ISA=avx512: this CPU has no AVX-512 (F, BW, DQ and VL)");
  }
  if (before)
    ::setenv("ORDO_ISA", saved.c_str(), 1);
  else
    ::unsetenv("ORDO_ISA");
}

// ORDO_PREPACK (engine/kernels/cpu.h's prepack_weights): 1 runs the f32 products on weights packed
// once, 0 does not, whatever the CPU's default, and `ordo info` says which; another value is one line.
TEST(Cli, OrdoPrepackTurnsThePackedWeightsOnAndOff) {
  const char* before = std::getenv("ORDO_PREPACK");
  const std::string saved = before ? before : "";
  const bool vector_kernels = highest_isa() != Isa::Scalar;
  ::setenv("ORDO_PREPACK", "1", 1);
  auto r = run_ordo("info" + kModel);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("prepacked kernel up to 512 rows") != std::string::npos, vector_kernels) << r.out;
  const std::string encode = "encode --json" + kModel + quote("the cat sat on the mat");
  const auto on = run_ordo(encode);
  ASSERT_EQ(on.status, 0) << on.err;
  ::setenv("ORDO_PREPACK", "0", 1);
  r = run_ordo("info" + kModel);
  EXPECT_EQ(r.out.find("prepacked"), std::string::npos) << r.out;
  const auto off = run_ordo(encode);
  ASSERT_EQ(off.status, 0) << off.err;
  // The same vector either way but for the order of the sums in the products' kernels.
  const json a = json_lines(on.out).at(0)["embedding"], b = json_lines(off.out).at(0)["embedding"];
  ASSERT_EQ(a.size(), 64u);
  ASSERT_EQ(b.size(), 64u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i].get<double>(), b[i].get<double>(), 1e-5) << i;
  ::setenv("ORDO_PREPACK", "yes", 1);
  expect_one_error(run_ordo("encode" + kModel + "cat"), "error: ORDO_PREPACK=yes: must be 0 or 1");
  if (before)
    ::setenv("ORDO_PREPACK", saved.c_str(), 1);
  else
    ::unsetenv("ORDO_PREPACK");
}

// A junk thread count for the libraries below ordo is ordo's one line and exit 2, before libgomp
// (loaded with oneDNN) can print its own warning; good values, lists for OMP_NUM_THREADS and an
// empty OpenBLAS variable (read as unset) run (<ordo/ordo.h>, bad_thread_variable).
TEST(Cli, JunkThreadCountsAreOneLineBeforeAnyLibrary) {
  struct Case {
    const char* name;
    const char* value;
    const char* error;  // or null: the command runs
  };
  const Case cases[] = {
      {"OMP_NUM_THREADS", "abc",
       "error: OMP_NUM_THREADS=abc: must be a whole number from 1, or a list of them such as 4,2 (or unset it)"},
      {"OMP_NUM_THREADS", "0",
       "error: OMP_NUM_THREADS=0: must be a whole number from 1, or a list of them such as 4,2 (or unset it)"},
      {"OMP_NUM_THREADS", "2,x",
       "error: OMP_NUM_THREADS=2,x: must be a whole number from 1, or a list of them such as 4,2 (or unset it)"},
      {"OMP_NUM_THREADS", "",
       "error: OMP_NUM_THREADS=: must be a whole number from 1, or a list of them such as 4,2 (or unset it)"},
      {"OMP_THREAD_LIMIT", "-1", "error: OMP_THREAD_LIMIT=-1: must be a whole number from 1 (or unset it)"},
      {"OPENBLAS_NUM_THREADS", "two", "error: OPENBLAS_NUM_THREADS=two: must be a whole number from 1 (or unset it)"},
      {"GOTO_NUM_THREADS", "4,2", "error: GOTO_NUM_THREADS=4,2: must be a whole number from 1 (or unset it)"},
      {"OMP_NUM_THREADS", "2,1", nullptr},
      {"OMP_NUM_THREADS", " +3 ", nullptr},
      {"OPENBLAS_NUM_THREADS", "", nullptr},
      {"OPENBLAS_NUM_THREADS", "1", nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    const char* before = std::getenv(c.name);
    const std::string saved = before ? before : "";
    ::setenv(c.name, c.value, 1);
    const auto r = run_ordo("encode" + kModel + "cat");
    if (before)
      ::setenv(c.name, saved.c_str(), 1);
    else
      ::unsetenv(c.name);
    EXPECT_EQ(r.err.find("libgomp"), std::string::npos) << r.err;
    if (c.error) {
      expect_one_error(r, c.error);
    } else {
      EXPECT_EQ(r.status, 0) << r.err;
    }
  }
}

}  // namespace
}  // namespace ordo
