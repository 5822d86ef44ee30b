// The pictures of `ordo pe` and `ordo attention`, end to end: the files the commands write, read
// back cell by cell through the layout numbers the PNG carries (so no font's widths matter).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <ordo/engine/model.h>
#include <ordo/errors.h>

#include "cli/cli_util.h"
#include "paths.h"
#include "teach/figure_util.h"
#include "teach/png_read.h"
#include "test_util.h"
#include "tools/teach/figure.h"

namespace ordo {
namespace {

using namespace test;  // the PNG readers, colours, files and commands of the test helpers

// A picture read back: the pixels and where its table is.
struct Picture {
  test::Decoded png;
  std::map<std::string, std::string> text;
  std::vector<double> plot, cells;  // x y w h; rows cols cell_w cell_h
  explicit Picture(const std::string& path) : png(read_png(path)), text(read_png_text(path)) {
    plot = numbers_of(text["ordo:plot"]);
    cells = numbers_of(text["ordo:cells"]);
  }
  bool ok() const { return png.width > 0 && plot.size() == 4 && cells.size() == 4; }
  Colour cell(int r, int c) const {  // inside cell (r, c), clear of a value written at its middle
    return png.at(int(plot[0] + (c + 0.15) * cells[2]), int(plot[1] + (r + 0.15) * cells[3]));
  }
};

bool near(Colour a, Colour b, int tol = 1) {
  for (int i = 0; i < 3; ++i)
    if (std::abs(a[i] - b[i]) > tol) return false;
  return true;
}

// The attention table as `ordo attention` prints it: rows of "  t piece   w w w ...".
std::vector<std::vector<double>> attention_table(const std::string& out, int S) {
  std::vector<std::vector<double>> A;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line) && int(A.size()) < S;) {
    if (line.find("query \\ key") != std::string::npos) continue;
    std::istringstream words(line);
    std::vector<double> row;
    std::string w;
    words >> w;  // t
    if (w.empty() || !std::isdigit(static_cast<unsigned char>(w[0]))) continue;
    words >> w;  // piece
    for (double v; words >> v;) row.push_back(v);
    if (int(row.size()) == S) A.push_back(row);
  }
  return A;
}

TEST(Pictures, UnwritablePathOrUnknownFormatIsOneErrorLineAndNothingElse) {
  test::TempDir dir;
  for (const std::string cmd : {"pe --no-properties --png ", "pe --similarity-png ", "attention a --png "}) {
    for (const std::string name : {"/no-such-dir/h.png", "/h.jpg", "/h"}) {
      const auto r = run_ordo(cmd + dir.path + name);
      EXPECT_EQ(r.status, 2) << cmd << name;
      EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
      EXPECT_EQ(r.err.rfind("error: " + dir.path + name + ":", 0), 0u) << r.err;
      EXPECT_EQ(r.out, "") << cmd << name;
    }
  }
  EXPECT_NE(run_ordo("pe --png " + dir.path + "/h.jpg").err.find(".png or .svg"), std::string::npos);
}

TEST(Pictures, AttentionCellsAreTheWeightsOnTheZeroToOneScale) {
  test::TempDir dir;
  const std::string path = dir.path + "/a.png";
  const auto r = run_ordo("attention --layer 0 --head 0 --png " + path + " " + test::quote("the cat sat"));
  ASSERT_EQ(r.status, 0) << r.err;
  Picture p(path);
  ASSERT_TRUE(p.ok()) << path;
  EXPECT_EQ(p.text["Title"], "Attention, layer 0 head 0: \"the cat sat\", the default model, with positions");
  EXPECT_EQ(p.text["ordo:scale"], "0 1 sequential");
  const int S = int(p.cells[0]);
  ASSERT_EQ(p.cells[1], S);
  EXPECT_EQ(p.cells[2], 48);  // a few tokens: 48-px cells
  const auto A = attention_table(r.out, S);
  ASSERT_EQ(int(A.size()), S) << r.out;
  for (int t = 0; t < S; ++t)
    for (int u = 0; u < S; ++u)
      EXPECT_TRUE(near(p.cell(t, u), rgb(teach::sequential(A[t][u])))) << t << "," << u << " weight " << A[t][u];
  EXPECT_NE(r.out.find("white = 0, mid blue = 0.5, dark blue = 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("each cell 48 x 48 px"), std::string::npos) << r.out;
}

// With and without positions: the same scale, so the same weight is the same colour in both.
TEST(Pictures, WithAndWithoutPositionsShareTheScale) {
  test::TempDir dir;
  const auto a = run_ordo("attention --png " + dir.path + "/a.png " + test::quote("the cat sat on the mat"));
  const auto b = run_ordo("attention --no-pe --png " + dir.path + "/b.png " + test::quote("the cat sat on the mat"));
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  Picture pa(dir.path + "/a.png"), pb(dir.path + "/b.png");
  EXPECT_EQ(pa.text["ordo:scale"], pb.text["ordo:scale"]);
  EXPECT_EQ(pb.text["Title"],
            "Attention, layer 0 head 0: \"the cat sat on the mat\", the default model, positions removed (--no-pe)");
  const auto A = attention_table(b.out, 6);
  ASSERT_EQ(A.size(), 6u) << b.out;
  EXPECT_TRUE(near(pb.cell(1, 2), rgb(teach::sequential(A[1][2]))));
  // --vmin/--vmax set it; an empty scale is refused.
  const auto c = run_ordo("attention --vmax 0.5 --png " + dir.path + "/c.png " + test::quote("the cat"));
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(Picture(dir.path + "/c.png").text["ordo:scale"], "0 0.5 sequential");
  const auto bad = run_ordo("attention --vmin 1 --vmax 0 --png " + dir.path + "/d.png " + test::quote("the cat"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--vmin must be below --vmax"), std::string::npos) << bad.err;
  EXPECT_FALSE(exists(dir.path + "/d.png"));
}

TEST(Pictures, PeTableFromTheCommandLine) {
  test::TempDir dir;
  const std::string path = dir.path + "/pe.png";
  const auto r = run_ordo("pe --positions 20 --dim 16 --no-properties --png " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + path), std::string::npos);
  Picture p(path);
  ASSERT_TRUE(p.ok());
  // 16 dims across 640 px: 40-px cells; 20 rows: 32-px cells (choose_cells aims at 640 px).
  EXPECT_EQ(p.cells, (std::vector<double>{20, 16, 40, 32}));
  EXPECT_EQ(p.text["ordo:scale"], "-1 1 diverging");
  EXPECT_NE(p.text["Title"].find("Positional encoding"), std::string::npos);
  EXPECT_EQ(p.cell(0, 0), rgb(teach::diverging(0.5)));  // sin 0
  EXPECT_EQ(p.cell(0, 1), (Colour{103, 0, 31}));        // cos 0 = 1
  EXPECT_EQ(p.cell(1, 0), rgb(teach::colour_of(std::sin(1.0), -1, 1)));
  EXPECT_EQ(p.cell(3, 1), rgb(teach::colour_of(std::cos(3.0), -1, 1)));  // cos 3 = -0.99: nearly the darkest blue
  // A scale of the user's: 0 .. 1 is sequential, and negative values take white.
  const auto s = run_ordo("pe --positions 20 --dim 16 --no-properties --vmin 0 --vmax 1 --png " + path);
  ASSERT_EQ(s.status, 0) << s.err;
  Picture q(path);
  EXPECT_EQ(q.text["ordo:scale"], "0 1 sequential");
  EXPECT_EQ(q.cell(3, 1), (Colour{255, 255, 255}));
  EXPECT_NE(s.out.find("values lie outside it"), std::string::npos) << s.out;
}

TEST(Pictures, SimilarityHasOnesOnTheDiagonalAndNamesEveryLeastAlikePair) {
  test::TempDir dir;
  const std::string path = dir.path + "/sim.png";
  const auto r = run_ordo("pe --positions 8 --dim 8 --no-properties --similarity-png " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  Picture p(path);
  ASSERT_TRUE(p.ok());
  // d = 8: cos(s, t) = (cos k + cos 0.1k + cos 0.01k + cos 0.001k) / 4 with k = t - s, lowest at k = 3
  // among 1 .. 7 (cos 3 = -0.99), shared by the 5 pairs 3 apart. The colours run from that value
  // rounded down to a tenth (0.7) up to 1.
  const double k3 = (std::cos(3.0) + std::cos(0.3) + std::cos(0.03) + std::cos(0.003)) / 4;
  const double low = std::floor(k3 * 10) / 10;
  EXPECT_EQ(p.text["ordo:scale"], teach::short_number(low) + " 1 sequential");
  EXPECT_EQ(p.cells, (std::vector<double>{8, 8, 48, 48}));  // 640 / 8, at most 48
  for (int t = 0; t < 8; ++t) EXPECT_EQ(p.cell(t, t), rgb(teach::colour_of(1.0, low, 1))) << t;
  EXPECT_EQ(p.cell(2, 7), p.cell(7, 2));  // symmetric
  char want[160];
  std::snprintf(want, sizeof want,
                "least alike: cosine %.4f, shared by all 5 pairs of positions 3 apart (0 and 3, ..., 4 and 7)", k3);
  EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  EXPECT_EQ(p.cell(0, 3), rgb(teach::colour_of(k3, low, 1)));
  // --vmin/--vmax keep their scale.
  ASSERT_EQ(run_ordo("pe --positions 8 --dim 8 --no-properties --vmin -1 --similarity-png " + path).status, 0);
  EXPECT_EQ(Picture(path).text["ordo:scale"], "-1 1 diverging");
  // One pair alone at the lowest value is named as such: at N = 10 it is k = 9, (0, 9).
  const auto one = run_ordo("pe --positions 10 --dim 8 --no-properties --similarity-png " + path);
  const double k9 = (std::cos(9.0) + std::cos(0.9) + std::cos(0.09) + std::cos(0.009)) / 4;
  std::snprintf(want, sizeof want, "least alike: positions 0 and 9, cosine %.4f\n", k9);
  EXPECT_NE(one.out.find(want), std::string::npos) << want << "\n" << one.out;
}

TEST(Pictures, SvgFromTheCommandLine) {
  test::TempDir dir;
  const auto r = run_ordo("pe --positions 8 --dim 8 --no-properties --similarity-png " + dir.path + "/s.svg");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(dir.path + "/s.svg");
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_EQ(svg.str().rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.str().find("<title>Cosine similarity of positions"), std::string::npos);
}

// --variant all compares the variants; the files hold one table, so asking for both is refused
// rather than silently writing nothing.
TEST(Pictures, VariantAllWithFilesIsRefused) {
  test::TempDir dir;
  for (const std::string file : {"--png a.png", "--csv a.csv", "--similarity-png s.png"}) {
    const auto r = run_ordo("pe --variant all " + file.substr(0, file.find(' ') + 1) + dir.path + "/" +
                            file.substr(file.find(' ') + 1));
    EXPECT_EQ(r.status, 2) << file;
    EXPECT_NE(r.err.find("name one variant"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(exists(dir.path + "/a.png"));
  EXPECT_FALSE(exists(dir.path + "/a.csv"));
  EXPECT_EQ(run_ordo("pe --variant doubled-exponent --no-properties --png " + dir.path + "/a.png").status, 0);
  EXPECT_TRUE(exists(dir.path + "/a.png"));
}

// The smallest sizes: the sample columns and positions of --variant must exist in the table.
TEST(PeCommand, TinySizesWork) {
  for (const char* args :
       {"--positions 1 --dim 2 --variant all", "--positions 2 --dim 2 --variant tensor2tensor",
        "--positions 1 --dim 4 --variant doubled-exponent", "--positions 2 --dim 3 --layout split"}) {
    const auto r = test::run_ordo(std::string("pe ") + args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  }
  const auto r = test::run_ordo("pe --positions 1 --dim 2 --variant all");
  EXPECT_NE(r.out.find("(0,2)"), std::string::npos) << r.out;  // d = 512 part: position 0 only
  EXPECT_EQ(r.out.find("(1,"), std::string::npos) << r.out;    // no position 1 when N = 1
}

// The numbers after "k=K" on the line that starts with `label`.
std::map<int, double> cosine_line(const std::string& out, const std::string& label) {
  std::map<int, double> by_k;
  const size_t at = out.find(label);
  if (at == std::string::npos) return by_k;
  std::istringstream in(out.substr(at + label.size(), out.find('\n', at) - at - label.size()));
  for (std::string word; in >> word;) {
    int k;
    if (std::sscanf(word.c_str(), "k=%d", &k) == 1) in >> by_k[k];
  }
  return by_k;
}

// ordo pe --model: a model's own positions. The learned table's mean cosine of rows k apart,
// computed here in double from the weights; the sinusoids' from the formula: every pair k apart
// has cos = (2/d) Σ_i cos(k·w_i).
TEST(PeCommand, AModelsOwnPositions) {
  const std::string learned = std::string(ORDO_SOURCE_DIR) + "/models/position-learned";
  const auto r = run_ordo("pe --model " + test::quote(learned));
  ASSERT_EQ(r.status, 0) << r.err;
  const Model m = Model::load(learned);
  const int N = m.config().max_positions, d = m.config().d_model;
  const float* P = m.weights().position_embedding;
  const auto got = cosine_line(r.out, "this model's learned table");
  ASSERT_FALSE(got.empty()) << r.out;
  for (const auto& [k, v] : got) {
    double sum = 0;
    for (int t = 0; t + k < N; ++t) {
      double dot = 0, a = 0, b = 0;
      for (int j = 0; j < d; ++j) {
        const double x = P[size_t(t) * d + j], y = P[size_t(t + k) * d + j];
        dot += x * y, a += x * x, b += y * y;
      }
      sum += dot / std::sqrt(a * b);
    }
    EXPECT_NEAR(v, sum / (N - k), 6e-4) << "k=" << k;
  }
  const auto sines = run_ordo("pe --model " + test::quote(std::string(ORDO_SOURCE_DIR) + "/models/default"));
  ASSERT_EQ(sines.status, 0) << sines.err;
  const auto s = cosine_line(sines.out, "this model's sinusoids");
  ASSERT_EQ(s.count(1), 1u) << sines.out;
  for (const auto& [k, v] : s) {
    double c = 0;
    for (int i = 0; i < 32; ++i) c += std::cos(k / std::pow(10000.0, 2.0 * i / 64)) / 32;
    EXPECT_NEAR(v, c, 6e-4) << "k=" << k;
  }
  const auto none = run_ordo("pe --model " + test::quote(std::string(ORDO_SOURCE_DIR) + "/models/position-none"));
  EXPECT_EQ(none.status, 0);
  EXPECT_NE(none.out.find("has no positions"), std::string::npos) << none.out;
  EXPECT_EQ(run_ordo("pe --dim 8 --model " + test::quote(learned)).status, 2);
  EXPECT_EQ(run_ordo("pe --positions 33 --model " + test::quote(learned)).status, 2);  // the table has 32 rows
}

}  // namespace
}  // namespace ordo
