// ordo: figures for the teaching views: heatmaps with a labelled colour bar and line charts with
// a legend, each with a title and axis names. Drawn with cairo, the text laid out by pango in
// DejaVu Sans (other scripts from the system's fallback fonts), written as PNG or SVG as the
// file name's extension says.
//
//   teach::Figure f{"Positional encoding", "dimension", "position"};
//   teach::Heatmap h;  h.rows = N; h.cols = d; h.values = ...; h.vmin = -1; h.vmax = 1;
//   h.value_name = "PE(t, dim)";
//   teach::Drawn where = teach::draw("pe.svg", f, h);
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ordo::teach {

struct Rgb {
  uint8_t r, g, b;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};

// Colour maps. Diverging: vmin dark blue, the middle near-white, vmax dark red (ColorBrewer's RdBu
// stops); sequential: vmin white, vmax dark blue (ColorBrewer's Blues stops); linear between the
// stops. A scale that runs from below 0 to above 0 is drawn diverging, any other sequential.
enum class ColourMap { Diverging, Sequential };
ColourMap map_for(double vmin, double vmax);
Rgb diverging(double f);   // f in [0, 1]: 0 dark blue, 0.5 near-white, 1 dark red
Rgb sequential(double f);  // f in [0, 1]: 0 white, 1 dark blue
// The colour of `v` on the scale vmin .. vmax: values outside take the nearer end; NaN is grey.
Rgb colour_of(double v, double vmin, double vmax);
constexpr Rgb kMissing{190, 190, 190};

struct Figure {
  std::string title;
  std::string x_name, y_name;  // what the horizontal and the vertical axis stand for
};

// A (rows, cols) table as coloured cells, row 0 at the top, with a colour bar on the right.
struct Heatmap {
  int rows = 0, cols = 0;
  std::vector<double> values;  // (rows, cols)
  double vmin = 0, vmax = 1;   // the colour bar's ends: the same numbers give the same colours in every picture
  std::string value_name;      // the colour bar's label
  // A name for each row and each column (token pieces, any UTF-8), or empty: numbered ticks.
  std::vector<std::string> row_labels, col_labels;
  int cell_w = 0, cell_h = 0;  // pixels per cell; 0: choose_cells(rows, cols, false)
  // Each cell's value written in it (two decimals), dark on light cells and white on dark ones,
  // where the cells are at least 40 × 24 px.
  bool show_values = false;
};

// Cell sizes that make the table about `target` pixels across its longer side, each within
// [1, 48] px; `square` keeps cells square (token × token and position × position tables).
void choose_cells(int rows, int cols, bool square, int* cell_w, int* cell_h, int target = 640);

// Lines through points, or bars, one colour each, named in a legend.
struct Series {
  Series() = default;
  Series(std::string name, std::vector<double> x, std::vector<double> y)
      : name(std::move(name)), x(std::move(x)), y(std::move(y)) {}
  std::string name;
  std::vector<double> x, y;        // the same length; a NaN y leaves a gap in the line (no bar)
  std::vector<double> lo, hi;      // empty, or an interval per point drawn as a whisker (e.g. 95%)
  std::vector<std::string> notes;  // empty, or a short text per point, drawn above its point or bar
  int colour = -1;                 // index into the palette; -1: the series' own index
  bool light = false;              // a paler shade of its colour (a second measure of the same thing)
};
struct LineChart {
  std::vector<Series> series;
  // The axes' ends; NaN: from the data, widened to round numbers.
  double x_min = NAN, x_max = NAN, y_min = NAN, y_max = NAN;
  // An optional dashed vertical line across the plot at x = marker_x (e.g. the training length),
  // named by marker_label beside its top.
  double marker_x = NAN;
  std::string marker_label;
  int plot_w = 640, plot_h = 400;  // the plot area in pixels
  // Bars instead of lines: at each x, one bar per series side by side, together bar_group wide (in
  // x units), from y_min up to y. Points that are not joined: separate groups, not a trend.
  bool bars = false;
  double bar_group = 0;
};

// Where things landed, in pixels from the top-left corner (in an SVG: in its user units, the same
// numbers). The same values are written into the PNG as text chunks (ordo:plot, ordo:cells,
// ordo:scale, ordo:axes; and the title as Title), so a test can find the cells in a picture without
// depending on how wide one font version draws a label.
struct Drawn {
  int width = 0, height = 0;
  int plot_x = 0, plot_y = 0, plot_w = 0, plot_h = 0;  // the table, or the chart's axes box
  int cell_w = 0, cell_h = 0;                          // heatmaps
  int bar_x = 0, bar_y = 0, bar_w = 0, bar_h = 0;      // heatmaps: the colour bar
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;   // line charts: the axes' ends
};

// "png" or "svg" from the path's extension (any case); anything else is an InputError(path, ...).
// The commands call it before their work, so a wrong name fails first.
std::string picture_format(const std::string& path);

// Draws and writes `path` all or nothing (a temporary file beside it, renamed over it when
// complete). Throws InputError(path, ...) when the extension is neither .png nor .svg or the file
// cannot be written, std::invalid_argument when the data does not fit the shape it claims.
Drawn draw(const std::string& path, const Figure& figure, const Heatmap& heatmap);
Drawn draw(const std::string& path, const Figure& figure, const LineChart& chart);

// How many characters of `text` no installed font can draw (pango's unknown glyphs): 0 for any
// script the fonts of tools/dev/install-deps.sh cover (DejaVu: Latin, Greek, Cyrillic, the
// block elements such as sentencepiece's "▁"; Droid Sans Fallback: Chinese, Japanese, Korean).
int unknown_glyphs(const std::string& text);

// One paragraph for stdout saying what was written and how to read it: the title, what the rows
// and columns are, the cell size and the colour scale (and how many values lie outside it).
std::string describe(const std::string& path, const Figure& figure, const Heatmap& heatmap, const Drawn& drawn,
                     const std::string& rows_are, const std::string& cols_are);

// A number for a label: at most 4 significant digits, no trailing zeros ("0.5", "-1", "1e+04").
std::string short_number(double v);

}  // namespace ordo::teach
