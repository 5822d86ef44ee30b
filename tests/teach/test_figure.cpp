// The figures: heatmaps and line charts drawn with cairo, read back with libpng. The checks find
// the table and the axes through the numbers the PNG carries (ordo:plot, ordo:cells, ...), so
// they hold whatever width one font version gives a label.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <ordo/errors.h>

#include "teach/figure_util.h"
#include "teach/png_read.h"
#include "test_util.h"
#include "tools/teach/figure.h"

namespace ordo {
namespace {

using namespace test;  // the PNG readers, colours, files and commands of the test helpers

// The names in a directory (a temporary file left behind would show here).
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Figure, ColourMaps) {
  EXPECT_EQ(rgb(teach::diverging(0)), (Colour{5, 48, 97}));
  EXPECT_EQ(rgb(teach::diverging(0.5)), (Colour{247, 247, 247}));
  EXPECT_EQ(rgb(teach::diverging(1)), (Colour{103, 0, 31}));
  // Halfway between the stops at 0.5 and 0.75: ((247 + 214) / 2, (247 + 96) / 2, (247 + 77) / 2), rounded.
  EXPECT_EQ(rgb(teach::diverging(0.625)), (Colour{231, 172, 162}));
  EXPECT_EQ(rgb(teach::sequential(0)), (Colour{255, 255, 255}));
  EXPECT_EQ(rgb(teach::sequential(1)), (Colour{8, 48, 107}));
  // A scale across 0 is diverging, any other sequential; values outside take the nearer end.
  EXPECT_EQ(teach::map_for(-1, 1), teach::ColourMap::Diverging);
  EXPECT_EQ(teach::map_for(0, 1), teach::ColourMap::Sequential);
  EXPECT_EQ(teach::map_for(-1, 0), teach::ColourMap::Sequential);
  EXPECT_EQ(rgb(teach::colour_of(0, -1, 1)), (Colour{247, 247, 247}));
  EXPECT_EQ(rgb(teach::colour_of(7, -1, 1)), (Colour{103, 0, 31}));
  EXPECT_EQ(rgb(teach::colour_of(0.5, 0, 1)), rgb(teach::sequential(0.5)));
  EXPECT_EQ(rgb(teach::colour_of(-3, 0, 1)), (Colour{255, 255, 255}));
  EXPECT_EQ(rgb(teach::colour_of(NAN, 0, 1)), rgb(teach::kMissing));
}

TEST(Figure, HeatmapCellsBarAndScaleReadBack) {
  test::TempDir dir;
  const std::string path = dir.path + "/h.png";
  teach::Heatmap h;
  h.rows = 2, h.cols = 3, h.values = {-1, 0, 1, 0.5, -0.5, NAN}, h.vmin = -1, h.vmax = 1;
  h.cell_w = 20, h.cell_h = 16, h.value_name = "value";
  const teach::Drawn d = teach::draw(path, {"A small table", "column", "row"}, h);
  const auto png = read_png(path);
  ASSERT_EQ(png.width, d.width);
  ASSERT_EQ(png.height, d.height);
  const auto text = read_png_text(path);
  EXPECT_EQ(text.at("Title"), "A small table");
  EXPECT_EQ(numbers_of(text.at("ordo:plot")), (std::vector<double>{double(d.plot_x), double(d.plot_y), 60, 32}));
  EXPECT_EQ(numbers_of(text.at("ordo:cells")), (std::vector<double>{2, 3, 20, 16}));
  EXPECT_EQ(text.at("ordo:scale"), "-1 1 diverging");
  auto cell = [&](int r, int c) { return png.at(d.plot_x + c * 20 + 9, d.plot_y + r * 16 + 7); };
  EXPECT_EQ(cell(0, 0), (Colour{5, 48, 97}));
  EXPECT_EQ(cell(0, 1), (Colour{247, 247, 247}));
  EXPECT_EQ(cell(0, 2), (Colour{103, 0, 31}));
  EXPECT_EQ(cell(1, 0), (Colour{214, 96, 77}));
  EXPECT_EQ(cell(1, 1), (Colour{67, 147, 195}));
  EXPECT_EQ(cell(1, 2), rgb(teach::kMissing));
  // Every pixel of a cell but its last column and row (the white line between cells of 12 px or more).
  for (int y = 0; y < 15; ++y)
    for (int x = 0; x < 19; ++x) ASSERT_EQ(png.at(d.plot_x + 20 + x, d.plot_y + y), (Colour{247, 247, 247}));
  EXPECT_EQ(png.at(d.plot_x + 19, d.plot_y + 7), (Colour{255, 255, 255}));
  // The colour bar: each pixel row is the colour of the value at its middle, vmax at the top.
  ASSERT_EQ(numbers_of(text.at("ordo:bar")),
            (std::vector<double>{double(d.bar_x), double(d.bar_y), double(d.bar_w), double(d.bar_h)}));
  EXPECT_GE(d.bar_h, 160);
  for (int y : {0, d.bar_h / 3, d.bar_h - 1})
    EXPECT_EQ(png.at(d.bar_x + d.bar_w / 2, d.bar_y + y), rgb(teach::colour_of(1 - 2.0 * (y + 0.5) / d.bar_h, -1, 1)))
        << y;
  // Text: the title above the table, the colour bar's numbers right of it, all in dark ink somewhere.
  auto ink_in = [&](int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = std::max(y0, 0); y < std::min(y1, png.height); ++y)
      for (int x = std::max(x0, 0); x < std::min(x1, png.width); ++x) {
        const auto c = png.at(x, y);
        n += c[0] < 120 && c[1] < 120 && c[2] < 120;
      }
    return n;
  };
  EXPECT_GT(ink_in(0, 0, png.width, d.plot_y), 30) << "no title";
  EXPECT_GT(ink_in(d.bar_x + d.bar_w + 4, d.bar_y, png.width, d.bar_y + d.bar_h), 30) << "no numbers on the bar";
  EXPECT_GT(ink_in(0, d.plot_y, d.plot_x, d.plot_y + d.plot_h), 10) << "no row numbers or axis name";
  EXPECT_EQ(listing(dir.path), std::vector<std::string>{"h.png"});
}

// The scale is the caller's, not the data's: the same value is the same colour in two pictures
// whose largest values differ (the with- and without-positions attention pictures).
TEST(Figure, FixedScaleGivesTheSameColourForTheSameValue) {
  test::TempDir dir;
  teach::Heatmap a, b;
  a.rows = b.rows = 1, a.cols = b.cols = 2, a.cell_w = b.cell_w = a.cell_h = b.cell_h = 30;
  a.values = {0.3, 0.6}, b.values = {0.3, 0.4};
  const auto da = teach::draw(dir.path + "/a.png", {}, a), db = teach::draw(dir.path + "/b.png", {}, b);
  const auto pa = read_png(dir.path + "/a.png"), pb = read_png(dir.path + "/b.png");
  EXPECT_EQ(pa.at(da.plot_x + 10, da.plot_y + 10), pb.at(db.plot_x + 10, db.plot_y + 10));
  EXPECT_EQ(pa.at(da.plot_x + 10, da.plot_y + 10), rgb(teach::sequential(0.3)));
  EXPECT_EQ(pb.at(db.plot_x + 40, db.plot_y + 10), rgb(teach::sequential(0.4)));
  EXPECT_EQ(read_png_text(dir.path + "/a.png").at("ordo:scale"), "0 1 sequential");
}

// Token pieces are drawn as they are: sentencepiece's "▁", accents, Chinese and Japanese.
TEST(Figure, NonAsciiLabelsHaveGlyphs) {
  for (const char* s :
       {"\xE2\x96\x81the", "caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "na\xC3\xAFve \xCE\xB1\xCE\xB2"})
    EXPECT_EQ(teach::unknown_glyphs(s), 0) << s << ": a font is missing (tools/dev/install-deps.sh installs them)";
  EXPECT_EQ(teach::unknown_glyphs("abc"), 0);
  test::TempDir dir;
  teach::Heatmap h;
  h.rows = h.cols = 3, h.values = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5}, h.cell_w = h.cell_h = 40;
  h.row_labels = h.col_labels = {"\xE2\x96\x81the", "caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"};
  h.row_labels.push_back("x");  // one too many
  EXPECT_THROW(teach::draw(dir.path + "/x.png", {}, h), std::invalid_argument);
  h.row_labels.pop_back();
  h.col_labels[1] = "bad \xFF byte";  // invalid UTF-8 is drawn as U+FFFD, not passed to pango
  const auto d = teach::draw(dir.path + "/l.png", {"Labels", "", ""}, h);
  EXPECT_GT(d.plot_y + d.plot_h, 0);
  EXPECT_EQ(read_png(dir.path + "/l.png").width, d.width);
}

TEST(Figure, SvgByExtensionWithTitleAndUnsmoothedCells) {
  test::TempDir dir;
  teach::Heatmap h;
  h.rows = 2, h.cols = 2, h.values = {0, 1, 1, 0}, h.cell_w = h.cell_h = 24;
  const std::string path = dir.path + "/h.SVG";
  const auto d = teach::draw(path, {"Two & two <cells>", "key", "query"}, h);
  const std::string svg = test::read_file(path);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 100);
  EXPECT_NE(svg.find("width=\"" + std::to_string(d.width) + "px\""), std::string::npos) << svg.substr(0, 300);
  EXPECT_NE(svg.find("<title>Two &amp; two &lt;cells&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("image-rendering:pixelated"), std::string::npos);
  EXPECT_NE(svg.find("key=\"ordo:scale\" value=\"0 1 sequential\""), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(Figure, BadNamesAndPathsAreInputErrorsAndLeaveNothing) {
  test::TempDir dir;
  teach::Heatmap h;
  h.rows = h.cols = 1, h.values = {0};
  for (const std::string name : {"/h.jpg", "/h", "/h.png.txt", "/dir.png/h"}) {
    try {
      teach::draw(dir.path + name, {}, h);
      ADD_FAILURE() << name << " was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(dir.path + name + ": ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(teach::draw(dir.path + "/no-such-dir/h.png", {}, h), InputError);
  EXPECT_FALSE(exists(dir.path + "/no-such-dir"));
  // An existing picture stays whole when the new one cannot be written.
  const std::string keep = dir.path + "/keep.png";
  teach::draw(keep, {}, h);
  const std::string before = test::read_file(keep);
  ::chmod(dir.path.c_str(), 0555);
  if (::geteuid() != 0) {
    EXPECT_THROW(teach::draw(keep, {"other", "", ""}, h), InputError);
  }
  ::chmod(dir.path.c_str(), 0755);
  EXPECT_EQ(test::read_file(keep), before);
  EXPECT_EQ(listing(dir.path), std::vector<std::string>{"keep.png"});
  h.vmin = h.vmax = 1;
  EXPECT_THROW(teach::draw(dir.path + "/v.png", {}, h), std::invalid_argument);
}

TEST(Figure, LineChartPointsMarkerAndAxes) {
  test::TempDir dir;
  const std::string path = dir.path + "/lines.png";
  teach::LineChart c;
  c.series = {{"model a", {0, 10, 20, 30}, {1.0, 0.9, 0.5, 0.25}}, {"model b", {0, 10, 20, 30}, {0.2, 0.3, NAN, 0.75}}};
  c.y_min = 0, c.y_max = 1, c.marker_x = 15, c.marker_label = "trained up to 15";
  const auto d = teach::draw(path, {"Accuracy against position", "position", "accuracy"}, c);
  const auto png = read_png(path);
  ASSERT_EQ(png.width, d.width);
  const auto text = read_png_text(path);
  EXPECT_EQ(text.at("Title"), "Accuracy against position");
  EXPECT_EQ(numbers_of(text.at("ordo:axes")), (std::vector<double>{0, 30, 0, 1}));
  EXPECT_EQ(numbers_of(text.at("ordo:plot")), (std::vector<double>{double(d.plot_x), double(d.plot_y), 640, 400}));
  auto X = [&](double x) { return int(d.plot_x + x / 30 * 640); };
  auto Y = [&](double y) { return int(d.plot_y + (1 - y) * 400); };
  // The middle of each marked point has its line's colour (Okabe and Ito's blue, then vermilion).
  EXPECT_EQ(png.at(X(10), Y(0.9)), (Colour{0, 114, 178}));
  EXPECT_EQ(png.at(X(20), Y(0.5)), (Colour{0, 114, 178}));
  EXPECT_EQ(png.at(X(10), Y(0.3)), (Colour{213, 94, 0}));
  EXPECT_EQ(png.at(X(30) - 2, Y(0.75)), (Colour{213, 94, 0}));
  // A NaN leaves a gap: nothing of b's colour halfway between its points at 10 and 30.
  for (int y = d.plot_y; y < d.plot_y + d.plot_h; ++y) ASSERT_NE(png.at(X(20), y), (Colour{213, 94, 0})) << y;
  // The dashed marker at x = 15: dark where its first dash is, in the plot's lower half too.
  int dark = 0;
  for (int y = d.plot_y + d.plot_h / 2; y < d.plot_y + d.plot_h; ++y) dark += png.at(X(15), y)[0] < 150;
  EXPECT_GT(dark, 80);
  EXPECT_LT(dark, 180);  // dashed, not solid
  // The legend right of the plot holds both colours.
  int blue = 0, red = 0;
  for (int y = d.plot_y; y < d.plot_y + 60; ++y)
    for (int x = d.plot_x + d.plot_w + 10; x < d.width; ++x) {
      blue += png.at(x, y) == Colour{0, 114, 178};
      red += png.at(x, y) == Colour{213, 94, 0};
    }
  EXPECT_GT(blue, 10);
  EXPECT_GT(red, 10);
}

TEST(Figure, LineChartRangeFromTheDataIsRounded) {
  test::TempDir dir;
  teach::LineChart c;
  c.series = {{"one", {1, 2, 3}, {0.13, 0.52, 0.87}}};
  const auto d = teach::draw(dir.path + "/l.svg", {}, c);
  EXPECT_EQ(d.x_min, 1);
  EXPECT_EQ(d.x_max, 3);
  EXPECT_DOUBLE_EQ(d.y_min, 0);
  EXPECT_DOUBLE_EQ(d.y_max, 1);
  c.series[0].y.pop_back();
  EXPECT_THROW(teach::draw(dir.path + "/l.svg", {}, c), std::invalid_argument);
}

// Bars: side by side in each group, an empty series takes no slot, the pale shade is halfway to
// white, the interval is a dark whisker over the bar.
TEST(Figure, BarsSideBySideWithIntervals) {
  test::TempDir dir;
  const std::string path = dir.path + "/bars.png";
  teach::LineChart c;
  c.bars = true, c.bar_group = 16;
  teach::Series a{"a top-1", {10, 30}, {40, 20}}, empty{"b: no data", {}, {}}, pale{"a top-5", {10, 30}, {80, 60}};
  a.lo = {30, 15}, a.hi = {50, 25};
  pale.colour = 0, pale.light = true;
  c.series = {a, empty, pale};
  c.x_min = 0, c.x_max = 40, c.y_min = 0, c.y_max = 100;
  const auto d = teach::draw(path, {"Bars", "x", "y"}, c);
  const auto png = read_png(path);
  auto X = [&](double x) { return int(d.plot_x + x / 40 * 640); };
  auto Y = [&](double y) { return int(d.plot_y + (100 - y) / 100 * 400); };
  const Colour blue{0, 114, 178}, pale_blue{140, 191, 220};  // v + (255 - v)·11/20, in integers
  // Two slots of 8 around x = 10: a in [2, 10), the pale one in [10, 18); the empty series has none.
  EXPECT_EQ(png.at(X(4), Y(10)), blue);
  EXPECT_EQ(png.at(X(16), Y(10)), pale_blue);
  EXPECT_EQ(png.at(X(16), Y(70)), pale_blue);  // up to 80
  EXPECT_NE(png.at(X(4), Y(45)), blue);        // a stops at 40 ...
  EXPECT_LT(png.at(X(6), Y(45))[0], 100);      // ... where its whisker, at the bar's centre, goes on to 50
  EXPECT_EQ(png.at(X(21), Y(10)), (Colour{255, 255, 255}));  // between the groups
  teach::LineChart bad = c;
  bad.series[0].lo.pop_back();
  EXPECT_THROW(teach::draw(path, {}, bad), std::invalid_argument);
}

TEST(Figure, ShortNumbers) {
  EXPECT_EQ(teach::short_number(0.5), "0.5");
  EXPECT_EQ(teach::short_number(-1), "-1");
  EXPECT_EQ(teach::short_number(1e-17), "0");
  EXPECT_EQ(teach::short_number(0.30000000000000004), "0.3");
}

}  // namespace
}  // namespace ordo
