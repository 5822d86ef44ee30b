// ordo trace and ordo attention: the stages are there, in order, and their numbers agree with one
// another and with ordo encode.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::quote;
using test::run_ordo;

const std::string kText = "the cat sat on the mat";  // 6 pieces in the default model

// The numbers of stage `heading` ("[5] input"): one row per token, the values after its label.
std::vector<std::vector<double>> stage_rows(const std::string& out, const std::string& heading, int rows) {
  const size_t at = out.find("\n" + heading + " ");
  if (at == std::string::npos) return {};
  std::istringstream in(out.substr(at + 1));
  std::string line;
  std::getline(in, line);  // heading
  std::getline(in, line);  // equation
  std::getline(in, line);  // column numbers or keys
  std::vector<std::vector<double>> table;
  for (int r = 0; r < rows && std::getline(in, line); ++r) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    std::vector<double> v;
    for (size_t i = 2; i < w.size(); ++i) v.push_back(std::stod(w[i]));  // skip "t" and the piece
    table.push_back(v);
  }
  return table;
}

TEST(Trace, EveryStageInOrder) {
  const auto r = run_ordo("trace " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  size_t pos = 0;
  for (const char* stage :
       {"pieces and ids", "embedding rows", "after x sqrt(d)", "positional encoding", "input", "layer 0 of 2",
        "q | k | v", "attention weights, head 0", "attention weights, head 3", "heads concatenated",
        "output projection", "attention + residual, norm1", "feed-forward hidden", "feed-forward + residual, norm2",
        "layer 1 of 2", "final hidden states", "pooled vector"}) {
    const size_t next = r.out.find(stage, pos);
    ASSERT_NE(next, std::string::npos) << "missing or out of order: " << stage;
    pos = next;
  }
  int heads = 0;
  for (size_t p = 0; (p = r.out.find("] attention weights, head", p)) != std::string::npos; ++p) ++heads;
  EXPECT_EQ(heads, 2 * 4);  // every head of every layer
  EXPECT_NE(r.out.find("(S, 3d) = (6, 192)"), std::string::npos);
  EXPECT_NE(r.out.find("(S, F) = (6, 256)"), std::string::npos);
}

TEST(Trace, InputIsScaledEmbeddingPlusPositions) {
  const auto r = run_ordo("trace --dims 10 " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto e = stage_rows(r.out, "[2] embedding rows", 6), scaled = stage_rows(r.out, "[3] after x sqrt(d)", 6),
             pe = stage_rows(r.out, "[4] positional encoding", 6), x = stage_rows(r.out, "[5] input", 6);
  ASSERT_EQ(x.size(), 6u);
  for (int t = 0; t < 6; ++t) {
    ASSERT_EQ(x[t].size(), 10u);
    for (int j = 0; j < 10; ++j) {
      EXPECT_NEAR(scaled[t][j], e[t][j] * 8.0, 8 * 5e-5 + 5e-5);  // √64 = 8; values printed to 4 decimals
      EXPECT_NEAR(x[t][j], scaled[t][j] + pe[t][j], 1.5e-4);
    }
  }
  EXPECT_NEAR(pe[1][0], std::sin(1.0), 5e-5);
  EXPECT_NEAR(pe[1][1], std::cos(1.0), 5e-5);
}

TEST(Trace, AttentionRowsSumToOne) {
  const auto r = run_ordo("trace " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  for (int n = 7; n <= 10; ++n) {
    const auto A = stage_rows(r.out, "[" + std::to_string(n) + "] attention weights, head " + std::to_string(n - 7), 6);
    ASSERT_EQ(A.size(), 6u) << n;
    for (const auto& row : A) {
      double sum = 0;
      for (double a : row) {
        EXPECT_GE(a, 0.0);
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0, 6 * 5e-5);
    }
  }
}

TEST(Trace, EndsWithWhatEncodeGives) {
  const auto r = run_ordo("trace --dims 8 " + quote(kText));
  const auto e = run_ordo("encode --json --pooling none " + quote(kText));
  const auto m = run_ordo("encode --json " + quote(kText));
  ASSERT_EQ(r.status + e.status + m.status, 0) << r.err << e.err << m.err;
  const auto hidden = nlohmann::json::parse(e.out)["hidden"];
  const auto h = stage_rows(r.out, "[27] final hidden states", 6);
  ASSERT_EQ(h.size(), 6u);
  for (int t = 0; t < 6; ++t)
    for (int j = 0; j < 8; ++j) EXPECT_NEAR(h[t][j], hidden[t][j].get<double>(), 5.1e-5) << t << "," << j;
  // The pooled line: "  [  0.4357,   0.6735, ...] |v| = 6.1767"
  const auto pooled = nlohmann::json::parse(m.out)["embedding"];
  std::string line = r.out.substr(r.out.find("[", r.out.find("[28] pooled vector") + 5));
  std::istringstream in(line.substr(1));
  for (int j = 0; j < 8; ++j) {
    double v;
    char comma;
    in >> v >> comma;
    EXPECT_NEAR(v, pooled[j].get<double>(), 5.1e-5) << j;
  }
}

TEST(Trace, NoPeDropsThePositions) {
  const auto r = run_ordo("trace --no-pe " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  // Stage 4 keeps its number, marked skipped, so the input (stage 5) is the scaled embedding itself.
  EXPECT_NE(r.out.find("[4] positional encoding   skipped"), std::string::npos) << r.out;
  EXPECT_EQ(stage_rows(r.out, "[3] after x sqrt(d)", 6), stage_rows(r.out, "[5] input", 6));
}

// --inside shows one head's q, k, v, scores, scaled scores and A·v, between the other stages; the
// scores are q·kᵀ of the printed rows and their softmax the weights after them.
TEST(Trace, InsideOneHead) {
  const auto r = run_ordo("trace --dims 16 --inside 1,1 " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  // Layer 1: q | k | v at 16, head 0 at 17, then head 1's inside from 18.
  const auto q = stage_rows(r.out, "[18] query, head 1", 6), k = stage_rows(r.out, "[19] key, head 1", 6);
  const auto s = stage_rows(r.out, "[21] scores, head 1", 6), z = stage_rows(r.out, "[22] scaled scores, head 1", 6);
  const auto A = stage_rows(r.out, "[23] attention weights, head 1", 6);
  ASSERT_EQ(q.size(), 6u);
  ASSERT_EQ(q[0].size(), 16u);
  ASSERT_EQ(s.size(), 6u);
  ASSERT_EQ(A.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    double zmax = -1e300, zsum = 0;
    for (int j = 0; j < 6; ++j) {
      double dot = 0;
      for (int e = 0; e < 16; ++e) dot += q[i][e] * k[j][e];
      EXPECT_NEAR(s[i][j], dot, 0.02 + 1e-3 * std::fabs(dot)) << i << "," << j;  // rows printed to 4 decimals
      EXPECT_NEAR(z[i][j], s[i][j] / 4.0, 1e-3);                                 // √16
      zmax = std::max(zmax, z[i][j]);
    }
    for (int j = 0; j < 6; ++j) zsum += std::exp(z[i][j] - zmax);
    for (int j = 0; j < 6; ++j) EXPECT_NEAR(A[i][j], std::exp(z[i][j] - zmax) / zsum, 2e-3);
  }
  EXPECT_NE(r.out.find("] head output, head 1   (S, dh) = (6, 16)"), std::string::npos);
  // The other heads show their weights only.
  EXPECT_EQ(r.out.find("query, head 0"), std::string::npos);
  const auto bad = run_ordo("trace --inside 2,0 " + quote(kText));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(test::count_lines(bad.err), 1) << bad.err;
}

// --reference runs the plain encoder of engine/reference.cpp: the same stages in the same order,
// the same numbers to float rounding.
TEST(Trace, ReferenceGivesTheSameStages) {
  for (const std::string extra : {"", "--no-pe "}) {
    const auto f = run_ordo("trace --json --inside 1,1 " + extra + quote(kText));
    const auto r = run_ordo("trace --json --reference --inside 1,1 " + extra + quote(kText));
    ASSERT_EQ(f.status + r.status, 0) << f.err << r.err;
    const auto a = nlohmann::json::parse(f.out), b = nlohmann::json::parse(r.out);
    EXPECT_EQ(a["encoder"], "fast");
    EXPECT_EQ(b["encoder"], "reference");
    ASSERT_EQ(a["stages"].size(), b["stages"].size());
    for (size_t n = 0; n < a["stages"].size(); ++n) {
      const auto &x = a["stages"][n], &y = b["stages"][n];
      ASSERT_EQ(x["name"], y["name"]) << n;
      ASSERT_EQ(x.contains("values"), y.contains("values")) << n;
      if (!x.contains("values")) continue;
      EXPECT_EQ(x["layer"], y["layer"]) << n;
      EXPECT_EQ(x["head"], y["head"]) << n;
      ASSERT_EQ(x["shape"], y["shape"]) << n;
      for (size_t t = 0; t < x["values"].size(); ++t)
        for (size_t j = 0; j < x["values"][t].size(); ++j) {
          const double u = x["values"][t][j], v = y["values"][t][j];
          ASSERT_NEAR(u, v, 2e-4 * std::max(1.0, std::fabs(v))) << x["name"] << " " << t << "," << j;
        }
    }
  }
}

// The masked-LM head's top guesses per piece close the trace, the same as --json gives.
TEST(Trace, EndsWithTheHeadsGuesses) {
  const auto r = run_ordo("trace " + quote(kText));
  const auto j = run_ordo("trace --json " + quote(kText));
  ASSERT_EQ(r.status + j.status, 0) << r.err << j.err;
  EXPECT_NE(r.out.find("] masked-LM logits   (S, V) = (6, 8000)"), std::string::npos);
  const auto top = nlohmann::json::parse(j.out)["mlm_top"];
  ASSERT_EQ(top.size(), 6u);
  for (const auto& row : top) {
    ASSERT_EQ(row.size(), 3u);
    EXPECT_GE(row[0]["prob"].get<double>(), row[1]["prob"].get<double>());
  }
  EXPECT_EQ(top[3][0]["piece"], "▁on");  // unmasked, the head sees the piece itself
}

// --parts: the four parts add up to the scaled scores, whose softmax is the weights table.
TEST(AttentionCommand, PartsAddUpToTheScores) {
  const auto r = run_ordo("attention --layer 1 --head 1 --parts " + quote(kText));
  ASSERT_EQ(r.status, 0) << r.err;
  auto table = [&](const std::string& name) {
    return stage_rows("\n[0] x \n" + r.out.substr(r.out.find("\n" + name + "\n") + 1), "[0] x", 6);
  };
  const auto A = stage_rows("\n[0] x (S, S)\n" + r.out.substr(r.out.find("row = query")), "[0] x", 6);
  const auto cc = table("content . content"), cp = table("content . position"), pc = table("position . content"),
             pp = table("position . position"),
             all = table("the four added (= q k^T / sqrt(dh), whose softmax is the table above)");
  ASSERT_EQ(all.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    double zmax = -1e300, zsum = 0;
    for (int j = 0; j < 6; ++j) {
      EXPECT_NEAR(cc[i][j] + cp[i][j] + pc[i][j] + pp[i][j], all[i][j], 2.5e-3);
      zmax = std::max(zmax, all[i][j]);
    }
    for (int j = 0; j < 6; ++j) zsum += std::exp(all[i][j] - zmax);
    for (int j = 0; j < 6; ++j) EXPECT_NEAR(A[i][j], std::exp(all[i][j] - zmax) / zsum, 2e-3);
  }
  EXPECT_EQ(run_ordo("attention --parts --no-pe " + quote(kText)).status, 2);
}

TEST(AttentionCommand, SameTableAsTheTrace) {
  const auto a = run_ordo("attention --layer 1 --head 2 " + quote(kText));
  const auto t = run_ordo("trace " + quote(kText));
  ASSERT_EQ(a.status + t.status, 0) << a.err << t.err;
  // Layer 0 is stages 6 .. 15 (q | k | v, 4 heads, 5 more); layer 1 has q | k | v at 16, head 2 at 19.
  const auto from_trace = stage_rows(t.out, "[19] attention weights, head 2", 6);
  // Its table, read the same way: the line "row = query token ..." stands where the trace has the equation.
  const auto from_attention =
      stage_rows("\n[0] attention (S, S)\n" + a.out.substr(a.out.find("row = query")), "[0] attention", 6);
  ASSERT_EQ(from_trace.size(), 6u);
  EXPECT_EQ(from_attention, from_trace);
}

TEST(AttentionCommand, BadLayerOrHeadIsAUsageError) {
  for (const char* args : {"--layer 2", "--head 4", "--layer -1"}) {
    const auto r = run_ordo(std::string("attention ") + args + " " + quote(kText));
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("error: ordo attention: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(run_ordo("trace " + quote("")).status, 2);
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

TEST(AttentionCommand, ACommaStaysInsideTheText) {
  const auto r = test::run_ordo("attention " + test::quote("a cat, a mat"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(S, S) = (5, 5)"), std::string::npos) << r.out;  // ▁a ▁cat , ▁a ▁mat
  EXPECT_EQ(test::run_ordo("attention a b").status, 2);                  // two texts: a usage error
}

TEST(AttentionCommand, AnUnwritablePictureStopsBeforePrinting) {
  test::TempDir dir;
  for (const std::string cmd : {"attention a --png ", "pe --png "}) {
    const auto r = test::run_ordo(cmd + dir.path + "/missing/x.png");
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  }
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

// `ordo attention --by-distance` against the one-text tables of `ordo attention`, averaged here:
// for head (1, 1) and offsets -2 .. 2, the mean over the rows of each bucket that have the key.
TEST(AttentionCommand, ByDistanceAveragesTheOneTextTables) {
  const std::vector<std::string> lines = {"the cat sat on the mat", "a dog ran",
                                          "she walked to the house by the river"};
  std::string file;
  for (const auto& l : lines) file += l + "\n";
  const auto r = test::run_ordo("attention --by-distance --input - --max-offset 2 --split 3 --json", file);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["texts"], 3);
  ASSERT_EQ(j["buckets"].size(), 2u);
  double sum[2][5] = {}, rows[2][5] = {};
  for (const auto& text : lines) {
    const auto a = test::run_ordo("attention --layer 1 --head 1 " + test::quote(text));
    ASSERT_EQ(a.status, 0) << a.err;
    std::istringstream in(a.out.substr(a.out.find("\n", a.out.find("row = query")) + 1));
    std::string line;
    std::getline(in, line);  // the keys
    std::vector<std::vector<double>> A;
    while (std::getline(in, line) && !line.empty()) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string x; words >> x;) w.push_back(x);
      std::vector<double> v;
      for (size_t k = 2; k < w.size(); ++k) v.push_back(std::stod(w[k]));
      A.push_back(v);
    }
    const int S = int(A.size());
    for (int i = 0; i < S; ++i)
      for (int o = -2; o <= 2; ++o)
        if (i + o >= 0 && i + o < S) sum[i >= 3][o + 2] += A[i][i + o], rows[i >= 3][o + 2] += 1;
  }
  const nlohmann::json& head = j["heads"][1 * 4 + 1];
  ASSERT_EQ(head["layer"], 1);
  ASSERT_EQ(head["head"], 1);
  for (int b = 0; b < 2; ++b)
    for (int o = 0; o < 5; ++o) {
      EXPECT_EQ(j["buckets"][b]["rows"][o].get<double>(), rows[b][o]) << b << " " << o;
      EXPECT_NEAR(head["mean"][b][o].get<double>(), sum[b][o] / rows[b][o], 1e-4)
          << b << " " << o;  // tables: 4 decimals
    }
  // The table form prints the same numbers.
  const auto t = test::run_ordo("attention --by-distance --input - --max-offset 2 --split 3", file);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("query positions 0-2 are inside the training length of 3, 3+ past it"), std::string::npos)
      << t.out;
}

TEST(AttentionCommand, ByDistanceMistakesAreUsageErrors) {
  for (const char* args : {"--by-distance --max-offset -1 --input -", "--by-distance --split -2 --input -",
                           "--by-distance --parts --input -", "--input - --json"}) {
    const auto r = test::run_ordo(std::string("attention ") + args, "the cat\n");
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  const auto none = test::run_ordo("attention --by-distance --input - --min-pieces 50", "the cat\n");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no text to average over"), std::string::npos) << none.err;
}

// --mask-head: the trace shows the masked head's slot of the concatenation as zeros, the fast and
// the plain encoder agree with it off, and a head the model lacks is one usage line.
TEST(MaskHead, TheHeadsSlotIsZeroAndBothEncodersAgree) {
  const std::string text = "the cat sat on the mat";
  const auto fast = test::run_ordo("trace --json --mask-head 0,2 " + test::quote(text));
  const auto plain = test::run_ordo("trace --json --reference --mask-head 0,2 " + test::quote(text));
  ASSERT_EQ(fast.status + plain.status, 0) << fast.err << plain.err;
  const nlohmann::json f = nlohmann::json::parse(fast.out), p = nlohmann::json::parse(plain.out);
  const auto concat = [](const nlohmann::json& j) {
    for (const auto& s : j["stages"])
      if (s["name"] == "heads concatenated" && s["layer"] == 0) return s["values"];
    return nlohmann::json();
  };
  const nlohmann::json c = concat(f);
  ASSERT_EQ(c.size(), 6u) << fast.out.substr(0, 400);
  for (const auto& row : c)
    for (int e = 32; e < 48; ++e) EXPECT_EQ(row[e].get<double>(), 0.0) << e;  // head 2's slot, dh = 16
  double worst = 0;
  const auto& hf = f["hidden"];
  const auto& hp = p["hidden"];
  ASSERT_EQ(hf.size(), hp.size());
  for (size_t t = 0; t < hf.size(); ++t)
    for (size_t e = 0; e < hf[t].size(); ++e)
      worst = std::max(worst, std::fabs(hf[t][e].get<double>() - hp[t][e].get<double>()));
  EXPECT_LT(worst, 1e-4);
  const auto unmasked = test::run_ordo("trace --json " + test::quote(text));
  EXPECT_NE(nlohmann::json::parse(unmasked.out)["hidden"], hf);
  for (const char* bad : {"2,0", "0,4", "1", "a,b", "1,1,1"}) {
    const auto r = test::run_ordo(std::string("score --mask-head ") + bad + " " + test::quote(text));
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--mask-head"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ordo
