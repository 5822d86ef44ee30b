// The pictures: heatmaps written with libpng, read back with libpng, pixel by pixel.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include <ordo/errors.h>

#include "cli/cli_util.h"
#include "teach/png_read.h"
#include "test_util.h"
#include "tools/teach/png_image.h"

namespace ordo {
namespace {

using test::read_png;
using test::run_ordo;
using Colour = std::array<int, 3>;

Colour rgb(teach::Rgb c) {
  return {c.r, c.g, c.b};
}

TEST(Png, ColourMapEnds) {
  EXPECT_EQ(rgb(teach::diverging(-1)), (Colour{5, 48, 97}));
  EXPECT_EQ(rgb(teach::diverging(0)), (Colour{247, 247, 247}));
  EXPECT_EQ(rgb(teach::diverging(1)), (Colour{103, 0, 31}));
  EXPECT_EQ(rgb(teach::diverging(7)), (Colour{103, 0, 31}));  // clamped
  EXPECT_EQ(rgb(teach::sequential(0)), (Colour{255, 255, 255}));
  EXPECT_EQ(rgb(teach::sequential(1)), (Colour{8, 48, 107}));
  // Halfway between the stops at 0 and 0.5: ((247 + 214) / 2, (247 + 96) / 2, (247 + 77) / 2), rounded.
  EXPECT_EQ(rgb(teach::diverging(0.25)), (Colour{231, 172, 162}));
}

TEST(Png, WrittenHeatmapReadsBackCellByCell) {
  test::TempDir dir;
  const std::string path = dir.path + "/h.png";
  // A 2 x 3 table of known values, 16-px cells; the table starts 24 px from the top left.
  teach::Heatmap h{2, 3, {-1, 0, 1, 0.5, -0.5, 0}, -1, 1, teach::ColourMap::Diverging, 16, 16};
  const teach::Image image = teach::render(h);
  teach::write_png(path, image);
  const auto png = read_png(path);
  ASSERT_EQ(png.width, image.width);
  ASSERT_EQ(png.height, image.height);
  // Left margin, cells, gap, colour bar, its numbers ("-1" is 11 px wide in the 5 x 7 font) and margins.
  EXPECT_EQ(png.width, 24 + 3 * 16 + 16 + 20 + 10 + 11 + 8);
  auto cell = [&](int r, int c) { return png.at(24 + c * 16 + 7, 24 + r * 16 + 7); };
  EXPECT_EQ(cell(0, 0), (Colour{5, 48, 97}));
  EXPECT_EQ(cell(0, 1), (Colour{247, 247, 247}));
  EXPECT_EQ(cell(0, 2), (Colour{103, 0, 31}));
  EXPECT_EQ(cell(1, 0), (Colour{214, 96, 77}));
  EXPECT_EQ(cell(1, 1), (Colour{67, 147, 195}));
  EXPECT_EQ(png.at(24 + 15, 24 + 7), (Colour{255, 255, 255}));  // the 1-px white line between 16-px cells
  EXPECT_EQ(png.at(2, 2), (Colour{255, 255, 255}));             // margin
  EXPECT_EQ(png.at(24 - 6, 24), (Colour{40, 40, 40}));          // the tick at row 0
  // The colour bar: dark red at its top, dark blue at its bottom.
  const int bar_x = 24 + 3 * 16 + 16 + 10;
  EXPECT_EQ(png.at(bar_x, 24), rgb(teach::diverging(1 - 1.0 / 64)));
  EXPECT_EQ(png.at(bar_x, 24 + 63), rgb(teach::diverging(-1 + 1.0 / 64)));
  struct stat st {};
  EXPECT_NE(::stat((path + ".partial").c_str(), &st), 0) << "the temporary file is left behind";
}

TEST(Png, UnwritablePathIsAnInputErrorAndLeavesNothing) {
  test::TempDir dir;
  const std::string path = dir.path + "/no-such-dir/h.png";
  teach::Heatmap h{1, 1, {0}, -1, 1, teach::ColourMap::Diverging, 8, 8};
  EXPECT_THROW(teach::write_png(path, teach::render(h)), InputError);
  const auto r = run_ordo("pe --no-properties --png " + path);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1);
  EXPECT_EQ(r.err.rfind("error: " + path + ":", 0), 0u) << r.err;
}

TEST(Png, LabelsAreAscii) {
  EXPECT_EQ(teach::label_text("\xE2\x96\x81the"), "_the");
  EXPECT_EQ(teach::label_text("caf\xC3\xA9"), "caf?");
  EXPECT_EQ(teach::label_text("abcdefghijklmn"), "abcdefghi.");
}

TEST(Png, AttentionHeatmapHasTheTableAndTheTokens) {
  test::TempDir dir;
  const std::string path = dir.path + "/a.png";
  const auto r = run_ordo("attention --layer 0 --head 0 --png " + path + " " + test::quote("a cat"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto png = read_png(path);
  ASSERT_GT(png.width, 0);
  // Two tokens: 48-px cells. The labels ("_a", "_cat") push the table right of and below 24 px.
  int dark = 0;
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < png.width; ++x) dark += png.at(x, y) == Colour{40, 40, 40};
  EXPECT_GT(dark, 20) << "no column labels drawn";
  EXPECT_NE(r.out.find("each cell 48 x 48 px"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("white = 0,"), std::string::npos) << r.out;
}

TEST(Png, PeHeatmapFromTheCommandLine) {
  test::TempDir dir;
  const std::string path = dir.path + "/pe.png";
  const auto r = run_ordo("pe --positions 20 --dim 16 --no-properties --png " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + path), std::string::npos);
  const auto png = read_png(path);
  ASSERT_GT(png.width, 0);
  // 16 dims across 640 px: 40-px cells; 20 rows: 32-px cells (choose_cells aims at 640 px).
  EXPECT_NE(r.out.find("each cell 40 x 32 px"), std::string::npos) << r.out;
  EXPECT_EQ(png.width, 24 + 16 * 40 + 16 + 20 + 10 + 11 + 8);
  EXPECT_EQ(png.height, 24 + 20 * 32 + 12);
  auto cell = [&](int t, int j) { return png.at(24 + j * 40 + 10, 24 + t * 32 + 10); };
  EXPECT_EQ(cell(0, 0), rgb(teach::diverging(0)));  // sin 0
  EXPECT_EQ(cell(0, 1), (Colour{103, 0, 31}));      // cos 0 = 1
  EXPECT_EQ(cell(1, 0), rgb(teach::diverging(std::sin(1.0))));
  EXPECT_EQ(cell(3, 1), rgb(teach::diverging(std::cos(3.0))));  // cos 3 = −0.99: nearly the darkest blue
}

TEST(Png, SimilarityHasOnesOnTheDiagonal) {
  test::TempDir dir;
  const std::string path = dir.path + "/sim.png";
  const auto r = run_ordo("pe --positions 10 --dim 8 --no-properties --similarity-png " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto png = read_png(path);
  ASSERT_GT(png.width, 0);
  // d = 8: the cosine of two positions is (cos k + cos 0.1k + cos 0.01k + cos 0.001k) / 4 > 0 for k < 10, so
  // the picture uses the sequential map from 0 (white) to 1 (dark blue). 10 positions: 48-px cells (640 / 10, capped at
  // 48).
  EXPECT_NE(r.out.find("white = 0, mid blue = 0.5, dark blue = 1;"), std::string::npos) << r.out;
  for (int t = 0; t < 10; ++t) EXPECT_EQ(png.at(24 + t * 48 + 20, 24 + t * 48 + 20), (Colour{8, 48, 107})) << t;
  // Symmetric: cell (2, 7) has the colour of cell (7, 2).
  EXPECT_EQ(png.at(24 + 7 * 48 + 20, 24 + 2 * 48 + 20), png.at(24 + 2 * 48 + 20, 24 + 7 * 48 + 20));
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

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

}  // namespace
}  // namespace ordo
