// ordo view: the data inside the page it writes agrees with ordo attention, ordo compare and the
// encoding's formula; bad input leaves nothing behind. (The page in a browser: tests/teach/view.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using nlohmann::json;
using test::quote;
using test::read_file;
using test::run_ordo;

const std::string kA = "the cat sat on the mat", kB = "the mat sat on the cat";  // 6 pieces each

// The JSON between <script id="ordo-data" type="application/json"> and the next </script>.
json page_data(const std::string& page) {
  const std::string open = "<script id=\"ordo-data\" type=\"application/json\">";
  const size_t from = page.find(open);
  if (from == std::string::npos) return nullptr;
  const size_t begin = from + open.size(), end = page.find("</script>", begin);
  return json::parse(page.substr(begin, end - begin));
}

// The page `ordo view ARGS --html FILE` writes ("" when it fails, with the failure reported).
std::string view_page(const std::string& args) {
  test::TempDir dir;
  const std::string path = dir.path + "/view.html";
  const auto r = run_ordo("view " + args + " --html " + path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + path), std::string::npos) << r.out;
  return read_file(path);
}

// ordo view for the two texts, once for all the tests below.
const json& pair_data() {
  static const json data = page_data(view_page(quote(kA) + " " + quote(kB)));
  return data;
}

// The table `ordo attention` prints: 6 rows of 6 weights after "t piece".
std::vector<std::vector<double>> attention_table(const std::string& args) {
  const auto r = run_ordo("attention " + args);
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out.substr(r.out.find("query \\ key")));
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> table;
  while (std::getline(in, line) && !line.empty()) {
    std::istringstream words(line);
    std::string t, piece;
    words >> t >> piece;
    std::vector<double> row;
    for (double v; words >> v;) row.push_back(v);
    table.push_back(row);
  }
  return table;
}

TEST(View, HoldsEveryLayerAndHeadOfBothRuns) {
  const json& d = pair_data();
  ASSERT_TRUE(d.is_object());
  const json config = json::parse(read_file(std::string(ORDO_DEFAULT_MODEL) + "/config.json"));
  const int L = config["n_layers"], H = config["n_heads"];
  EXPECT_EQ(d["format"], "ordo-view/1");
  EXPECT_EQ(d["model"]["n_layers"], L);
  EXPECT_EQ(d["model"]["n_heads"], H);
  ASSERT_EQ(d["texts"].size(), 2u);
  EXPECT_EQ(d["texts"][0]["text"], kA);
  EXPECT_EQ(d["texts"][1]["text"], kB);
  for (const json& x : d["texts"])
    for (const char* run : {"with_pe", "without_pe"}) {
      const json& A = x[run]["attention"];
      ASSERT_EQ(A.size(), size_t(L));
      for (const json& layer : A) {
        ASSERT_EQ(layer.size(), size_t(H));
        for (const json& map : layer) {
          ASSERT_EQ(map.size(), 6u);
          for (const json& row : map) {
            ASSERT_EQ(row.size(), 6u);
            double sum = 0;
            for (double v : row) sum += v;
            EXPECT_NEAR(sum, 1.0, 6 * 0.5e-4 + 1e-6) << run;  // each of 6 weights rounded to 4 decimals
          }
        }
      }
    }
}

TEST(View, AttentionIsWhatOrdoAttentionPrints) {
  const json& d = pair_data();
  for (const auto& [flag, run] : {std::pair{"", "with_pe"}, std::pair{"--no-pe ", "without_pe"}})
    for (int layer : {0, 1}) {
      const auto want =
          attention_table(std::string(flag) + "--layer " + std::to_string(layer) + " --head 2 " + quote(kB));
      const json& got = d["texts"][1][run]["attention"][layer][2];
      ASSERT_EQ(want.size(), 6u);
      for (int t = 0; t < 6; ++t)
        for (int u = 0; u < 6; ++u)
          EXPECT_NEAR(got[t][u].get<double>(), want[t][u], 1.01e-4)
              << run << " layer " << layer << " " << t << "," << u;
    }
}

TEST(View, WithoutPositionsBsMapsAreAsMapsPermuted) {
  const json& d = pair_data();
  // kA -> kB: the first "the" stays, cat and mat swap, the second "the" stays.
  const int to_b[] = {0, 5, 2, 3, 4, 1};
  double gap_without = 0, gap_with = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          auto gap = [&](const char* run) {
            return std::fabs(d["texts"][0][run]["attention"][l][h][i][j].get<double>() -
                             d["texts"][1][run]["attention"][l][h][to_b[i]][to_b[j]].get<double>());
          };
          gap_without = std::max(gap_without, gap("without_pe"));
          gap_with = std::max(gap_with, gap("with_pe"));
        }
  EXPECT_LE(gap_without, 1.01e-4);  // equal before rounding to 4 decimals
  EXPECT_GT(gap_with, 1e-2);
}

TEST(View, CompareIsWhatOrdoCompareReports) {
  const auto r = run_ordo("compare --json " + quote(kA) + " " + quote(kB));
  ASSERT_EQ(r.status, 0) << r.err;
  json want = json::parse(r.out);
  want.erase("a");
  want.erase("b");
  EXPECT_EQ(pair_data()["compare"], want);
}

TEST(View, PositionsAreTheSinusoidalFormula) {
  const json& P = pair_data()["positions"];
  ASSERT_EQ(P["count"], 6);
  const int d = 64;
  double worst_table = 0, worst_similarity = 0;
  for (int t = 0; t < 6; ++t) {
    // PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(...), interleaved, in double.
    for (int i = 0; i < d / 2; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / d);
      worst_table = std::max({worst_table, std::fabs(P["table"][t][2 * i].get<double>() - std::sin(angle)),
                              std::fabs(P["table"][t][2 * i + 1].get<double>() - std::cos(angle))});
    }
    // cos(PE(s), PE(t)) = Σ_i cos(w_i (s − t)) / (d/2)
    for (int s = 0; s < 6; ++s) {
      double sum = 0;
      for (int i = 0; i < d / 2; ++i) sum += std::cos((s - t) / std::pow(10000.0, 2.0 * i / d));
      worst_similarity = std::max(worst_similarity, std::fabs(P["similarity"][s][t].get<double>() - sum / (d / 2)));
    }
  }
  EXPECT_LE(worst_table, 0.5e-4 + 1e-6);
  EXPECT_LE(worst_similarity, 0.5e-4 + 1e-6);
}

TEST(View, OutputsMoveWhenPositionsAreSwitchedOff) {
  const json& o = pair_data()["texts"][0]["outputs"];
  ASSERT_EQ(o["cosine"].size(), 6u);
  for (int t = 0; t < 6; ++t) {
    const double c = o["cosine"][t], dist = o["distance"][t];
    EXPECT_TRUE(c >= -1.0 - 1e-9 && c <= 1.0 + 1e-9) << c;
    EXPECT_GT(dist, 1e-3) << t;  // positions change every piece's output
  }
  EXPECT_LT(o["pooled_cosine"].get<double>(), 1.0 - 1e-6);
}

TEST(View, OneTextHasNoCompare) {
  const json d = page_data(view_page(quote("a dog")));
  EXPECT_EQ(d["texts"].size(), 1u);
  EXPECT_TRUE(d["compare"].is_null());
}

TEST(View, AScriptEndInTheTextStaysInsideTheData) {
  const std::string text = "a </script><b>cat</b>";
  EXPECT_EQ(page_data(view_page(quote(text)))["texts"][0]["text"], text);
}

// "<!--" and a later "<script" in a data block change how an HTML parser finds its end (the page
// came out blank); so the data holds no '<', '>' or '&' at all, and U+2028/2029 are escaped.
TEST(View, TheDataBlockHoldsNoMarkupCharacters) {
  const std::string text = "an HTML page starts <!-- a comment <script> here & \u2028 \u2029";
  const std::string page = view_page(quote(text));
  const std::string open = "<script id=\"ordo-data\" type=\"application/json\">";
  const size_t begin = page.find(open) + open.size(), end = page.find("</script>", begin);
  ASSERT_NE(page.find(open), std::string::npos);
  const std::string block = page.substr(begin, end - begin);
  for (const char* c : {"<", ">", "&", "\u2028", "\u2029"}) EXPECT_EQ(block.find(c), std::string::npos) << c;
  EXPECT_EQ(json::parse(block)["texts"][0]["text"], text);
}

TEST(View, BadInputWritesNothingAndKeepsWhatWasThere) {
  test::TempDir dir;
  const std::string kept = dir.path + "/kept.html";
  std::ofstream(kept) << "an earlier page";
  const std::string too_long = [] {
    std::string s;
    for (int i = 0; i < 300; ++i) s += "cat ";
    return s;
  }();
  const std::pair<std::string, std::string> cases[] = {
      {"view " + quote(kA) + " --html " + kept + " " + quote(kB) + " " + quote(kA),
       "error: ordo view: needs one or two"},
      {"view " + quote(kA), "error: ordo view: needs --html"},
      {"view " + quote("") + " --html " + kept, "error: argument 1: the text has no pieces"},
      {"view " + quote(too_long) + " --html " + kept,
       "error: argument 1: text has 300 pieces, more than the 256 a page shows"},
      {"view " + quote(kA) + " --html " + dir.path + "/missing/v.html",
       "error: " + dir.path + "/missing/v.html: cannot write"},
      {"view " + quote(kA) + " --html " + dir.path, "error: " + dir.path + ": cannot write"},
  };
  for (const auto& [args, error] : cases) {
    const auto r = run_ordo(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind(error, 0), 0u) << r.err;
  }
  EXPECT_EQ(read_file(kept), "an earlier page");
  int files = 0;  // and no half-written page beside it
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path)) ++files;
  EXPECT_EQ(files, 1);
}

TEST(View, ALearnedTableLimitsThePieces) {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "a ";
  const auto r = run_ordo("view --model " + std::string(ORDO_SOURCE_DIR) + "/tests/corpus/odd/learned_positions " +
                          quote(text) + " --html " + dir.path + "/v.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("error: argument 1: text has 40 pieces, more than the model's max_positions 32", 0), 0u)
      << r.err;
}

// A <mask> in the text: the page holds the head's top 5 there, with and without positions, the
// same pieces and probabilities as `ordo fill --json` gives; an ordinary piece has none.
TEST(View, MaskPredictionsAreWhatOrdoFillGives) {
  const std::string text = "the <mask> sat on the mat.";
  const json d = page_data(view_page(quote(text)));
  EXPECT_EQ(d["model"]["masked_lm"], true);
  for (const auto& [run, flag] : {std::pair{"with_pe", ""}, std::pair{"without_pe", " --no-pe"}}) {
    SCOPED_TRACE(run);
    const auto fill = run_ordo("fill --json" + std::string(flag) + " " + quote(text));
    ASSERT_EQ(fill.status, 0) << fill.err;
    const json want = json::parse(fill.out)["masks"];
    const json& got = d["texts"][0][run]["predictions"];
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["position"], want[0]["position"]);
    EXPECT_EQ(d["texts"][0]["pieces"][got[0]["position"].get<int>()], "<mask>");
    ASSERT_EQ(got[0]["top"].size(), 5u);
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(got[0]["top"][k]["piece"], want[0]["top"][k]["piece"]);
      EXPECT_EQ(got[0]["top"][k]["id"], want[0]["top"][k]["id"]);
      EXPECT_NEAR(got[0]["top"][k]["probability"].get<double>(), want[0]["top"][k]["prob"].get<double>(), 1e-6);
    }
  }
  // Without a <mask>, no predictions.
  EXPECT_TRUE(pair_data()["texts"][0]["with_pe"]["predictions"].empty());
}

// Rope and alibi act inside the heads, so the page carries the chosen head's inside (section 2b) and, in
// section 5, what the model applies instead of a table of encodings. Both from the engine's own stages:
// the numbers must be those `ordo trace --json --inside L,H` reports for the same head.
const std::string kModels = std::string(ORDO_SOURCE_DIR) + "/models/";

json model_page(const std::string& model) {
  test::TempDir dir;
  const std::string path = dir.path + "/view.html";
  const auto r = run_ordo("view --model " + kModels + model + " " + quote(kA) + " --html " + path);
  EXPECT_EQ(r.status, 0) << r.err;
  return page_data(read_file(path));
}

// The stages of `ordo trace --json --inside LAYER,HEAD` for kA, by name ("q | k | v", "ALiBi bias", ...).
std::map<std::string, json> trace_stages(const std::string& model, int layer, int head) {
  const auto r = run_ordo("trace --json --model " + kModels + model + " --inside " + std::to_string(layer) + "," +
                          std::to_string(head) + " " + quote(kA));
  EXPECT_EQ(r.status, 0) << r.err;
  const json trace = json::parse(r.out);
  std::map<std::string, json> by_name;
  for (const json& s : trace["stages"])
    if (s.contains("values") && (s["layer"].is_null() || s["layer"] == layer)) by_name[s["name"]] = s;
  return by_name;
}

// Largest |got[r][c] − want[r][col0 + c]| over got's cells.
// A number of the JSON, where null is −∞ (JSON has no infinities: alibi's unseen side).
double number(const json& v) {
  return v.is_null() ? -INFINITY : v.get<double>();
}

// The largest difference of two tables; −∞ against −∞ is no difference, against a number an infinite one.
double gap(const json& got, const json& want, int col0 = 0) {
  double g = 0;
  for (size_t r = 0; r < got.size(); ++r)
    for (size_t c = 0; c < got[r].size(); ++c) {
      const double a = number(got[r][c]), b = number(want[r][col0 + c]);
      g = std::max(g, a == b ? 0.0 : std::abs(a - b));
    }
  return g;
}

constexpr double kRounded = 0.51e-4;  // the page's 4 decimals against the trace's floats

TEST(View, RopesRotationIsWhatOrdoTraceReports) {
  const json d = model_page("position-rope");
  const int layer = 1, head = 2, dh = d["model"]["head_dim"], dm = d["model"]["d_model"];
  const json& in = d["inside"]["heads"][layer][head];
  ASSERT_TRUE(in.is_object());
  ASSERT_TRUE(in["rope"].is_object());
  EXPECT_TRUE(in["alibi"].is_null());
  auto stages = trace_stages("position-rope", layer, head);
  // q and k before the rotation: the head's columns of q | k | v; after it: the head's query and key.
  const json& qkv = stages.at("q | k | v")["values"];
  EXPECT_LE(gap(in["rope"]["q_before"], qkv, head * dh), kRounded);
  EXPECT_LE(gap(in["rope"]["k_before"], qkv, dm + head * dh), kRounded);
  EXPECT_LE(gap(in["q"], stages.at("query")["values"]), kRounded);
  EXPECT_LE(gap(in["k"], stages.at("key")["values"]), kRounded);
  EXPECT_GT(gap(in["q"], in["rope"]["q_before"]), 1e-2);  // the rotation moved them (pieces 1.. turn)
  EXPECT_EQ(in["rope"]["equation"], stages.at("q and k rotated (rope)")["equation"]);
  // Section 5: the angles t·θ_i, θ_i = base^(−2i/dh), in double, for the 6 positions; no table to add.
  const json& P = d["positions"];
  EXPECT_EQ(P["kind"], "rotation");
  EXPECT_FALSE(P.contains("table"));
  const double base = d["model"]["pe_base"];
  ASSERT_EQ(P["angles"].size(), 6u);
  for (int t = 0; t < 6; ++t)
    for (int i = 0; i < dh / 2; ++i)
      EXPECT_NEAR(P["angles"][t][i].get<double>(), t * std::pow(base, -2.0 * i / dh), 0.51e-4) << t << "," << i;
}

TEST(View, AlibisBiasIsWhatOrdoTraceReports) {
  const json d = model_page("position-alibi");
  const int layers = d["model"]["n_layers"], heads = d["model"]["n_heads"];
  for (int layer = 0; layer < layers; ++layer)
    for (int head = 0; head < heads; ++head) {
      const json& in = d["inside"]["heads"][layer][head];
      ASSERT_TRUE(in["alibi"].is_object()) << layer << "," << head;
      EXPECT_TRUE(in["rope"].is_null());
      auto stages = trace_stages("position-alibi", layer, head);
      EXPECT_LE(gap(in["alibi"]["bias"], stages.at("ALiBi bias")["values"]), kRounded) << layer << "," << head;
      EXPECT_EQ(in["alibi"]["equation"], stages.at("ALiBi bias")["equation"]);
      // The steps add up: q·k/√dh (the trace's q·k times 1/√dh) + b = the softmax's input.
      const json& s = stages.at("scores")["values"];
      const double scale = 1 / std::sqrt(double(d["model"]["head_dim"].get<int>()));
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          EXPECT_NEAR(in["alibi"]["scores"][i][j].get<double>(), s[i][j].get<double>() * scale, 1e-4);
          const double biased = in["alibi"]["scores"][i][j].get<double>() + number(in["alibi"]["bias"][i][j]);
          if (std::isinf(biased))  // a key the head does not see, and no weight for it
            EXPECT_TRUE(in["scaled_scores"][i][j].is_null() && in["weights"][i][j].get<double>() == 0.0);
          else
            EXPECT_NEAR(biased, number(in["scaled_scores"][i][j]), 1.01e-4);
        }
      // Section 5: layer 0's bias of every head, the same numbers.
      if (layer == 0) {
        EXPECT_LE(gap(d["positions"]["bias"][head], stages.at("ALiBi bias")["values"]), kRounded);
      }
    }
  EXPECT_EQ(d["positions"]["kind"], "bias");
  EXPECT_FALSE(d["positions"].contains("table"));  // no sinusoid table for a model that adds none
}

TEST(View, TheInsideOfAnAddedEncodingHasNoRotationOrBias) {
  const json& d = pair_data();
  EXPECT_EQ(d["positions"]["kind"], "table");
  const json& in = d["inside"]["heads"][1][1];
  EXPECT_TRUE(in["rope"].is_null() && in["alibi"].is_null());
  EXPECT_LE(gap(in["weights"], d["texts"][0]["with_pe"]["attention"][1][1]), 1e-9);  // the map of section 3
}

// ---- ordo view --standalone: the page that runs ordo itself (WebAssembly; in a browser: tests/teach/view)

std::string from_base64(const std::string& s) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : s) {
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* p = c ? std::strchr(a, c) : nullptr;
    if (!p) continue;  // '=' and anything else
    v = v << 6 | uint32_t(p - a), bits += 6;
    if (bits >= 8) out += char((v >> (bits - 8)) & 0xFF), bits -= 8;
  }
  return out;
}

// The text of the element that starts with `open`, up to the next </script>.
std::string element(const std::string& page, const std::string& open) {
  const size_t from = page.find(open);
  if (from == std::string::npos) return "";
  const size_t begin = from + open.size();
  return page.substr(begin, page.find("</script>", begin) - begin);
}

// The page carries the model's three files byte for byte, the engine, and data marked live and standalone.
TEST(View, StandaloneCarriesTheModelAndTheEngine) {
  const std::string web = std::filesystem::path(ORDO_BINARY).parent_path().string() + "/web/ordo_web.wasm";
  if (!std::filesystem::exists(web)) GTEST_SKIP() << web << " is missing (cmake --build build --target ordo_web)";
  const std::string model = std::string(ORDO_SOURCE_DIR) + "/models/position-rope";
  const std::string page = view_page("--standalone --model " + model);
  const json data = page_data(page);
  EXPECT_EQ(data["live"], true);
  EXPECT_EQ(data["standalone"], true);
  EXPECT_EQ(data["texts"][0]["text"], kA) << "the walkthrough's texts when none is given";
  EXPECT_EQ(data["texts"][1]["text"], kB);
  const json files = json::parse(element(page, "<script id=\"ordo-model\" type=\"application/json\">"));
  // config, weights, tokenizer, and the training length's training.json where the model has one
  const bool trained = std::filesystem::exists(model + "/training.json");
  ASSERT_EQ(files.size(), trained ? 4u : 3u) << files.dump().substr(0, 200);
  if (trained) {
    EXPECT_EQ(from_base64(files["model/training.json"]), read_file(model + "/training.json"));
  }
  EXPECT_EQ(from_base64(files["model/config.json"]), read_file(model + "/config.json"));
  EXPECT_EQ(from_base64(files["model/model.safetensors"]), read_file(model + "/model.safetensors"));
  EXPECT_EQ(from_base64(files["model/tokenizer.model"]), read_file(model + "/tokenizer.model"));
  EXPECT_EQ(from_base64(element(page, "<script id=\"ordo-engine\" type=\"application/octet-stream\">")),
            read_file(web));
  EXPECT_EQ(page.find("<!--@ORDO_ENGINE@-->"), std::string::npos);
}

// A model past the page's limit is refused by name, with what to do instead; nothing is written.
TEST(View, StandaloneRefusesAModelPastTheLimit) {
  test::TempDir dir;
  std::ofstream(dir.path + "/config.json")
      << R"({"vocab_size": 8000, "d_model": 1024, "n_heads": 4, "d_ff": 64, "n_layers": 1, "activation": "relu",
            "norm_first": false, "positional_encoding": "sinusoidal", "tokenizer": "tokenizer.model"})";
  const auto init = run_ordo("init --config " + dir.path + "/config.json --out " + dir.path + "/big");
  ASSERT_EQ(init.status, 0) << init.err;
  const auto r = run_ordo("view --standalone --model " + dir.path + "/big --html " + dir.path + "/v.html");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: " + dir.path + "/big: the model's files are ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("more than the 32 MB a standalone page carries: show it with `ordo serve --model"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/v.html"));
}

// Without the engine beside the binary (a copy of it elsewhere), the command says what to build.
TEST(View, StandaloneWithoutTheEngineSaysWhatToBuild) {
  test::TempDir dir;
  std::filesystem::copy_file(ORDO_BINARY, dir.path + "/ordo");
  std::filesystem::permissions(dir.path + "/ordo", std::filesystem::perms::owner_all);
  const std::string cmd = "'" + dir.path + "/ordo' view --standalone --model '" + std::string(ORDO_SOURCE_DIR) +
                          "/models/default' --html '" + dir.path + "/v.html' 2>'" + dir.path + "/err'";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  const std::string err = read_file(dir.path + "/err");
  EXPECT_EQ(err.rfind("error: ordo view --standalone: needs ordo compiled to WebAssembly", 0), 0u) << err;
  EXPECT_NE(err.find("cmake --build build --target ordo_web"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/v.html"));
}

}  // namespace
}  // namespace ordo
