// ordo: heatmaps written as PNG (libpng), for the pictures of `ordo pe` and `ordo attention`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ordo::teach {

struct Rgb {
  uint8_t r, g, b;
};

// An 8-bit RGB picture, rows top to bottom.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // (height, width, 3)
  Image(int w, int h, Rgb fill);
  void fill(int x, int y, int w, int h, Rgb c);  // clipped to the picture
};

// Colour maps. diverging: −1 dark blue, 0 near-white, +1 dark red (ColorBrewer's RdBu stops,
// linearly interpolated); sequential: 0 white to 1 dark blue. Values outside clamp to the ends.
Rgb diverging(double v);
Rgb sequential(double v);

enum class ColourMap { Diverging, Sequential };

// A (rows, cols) table as cells of cell_w × cell_h pixels, row 0 at the top, labelled on the left
// and top edges, with a colour bar on the right (`hi` at its top, `lo` at its bottom, each end and
// the middle numbered). Cells of 12 px or more are separated by 1 px white lines.
struct Heatmap {
  int rows, cols;
  std::vector<double> values;  // (rows, cols)
  double lo, hi;               // the values the colour map's ends stand for
  ColourMap map;
  int cell_w, cell_h;
  // Names drawn beside each row and above each column (token pieces); without them the edges get
  // a tick every 10 cells and numbers where they fit.
  std::vector<std::string> row_labels = {}, col_labels = {};
};
Image render(const Heatmap& h);
// A label in the picture's font: sentencepiece's "▁" as '_', other non-ASCII characters as '?',
// at most 10 characters.
std::string label_text(const std::string& piece);
// Cell sizes that make the table about `target` pixels across its longer side, each within
// [1, 48] px; `square` keeps cells square (for token × token and position × position tables).
void choose_cells(int rows, int cols, bool square, int* cell_w, int* cell_h, int target = 640);
// One paragraph for stdout saying how to read the picture.
std::string describe(const Heatmap& h, const Image& image, const std::string& path, const std::string& rows_are,
                     const std::string& cols_are, const std::string& value_is);

// Writes `path` atomically: a temporary file beside it, renamed over it when complete. Throws
// InputError(path, ...) when it cannot be written.
void write_png(const std::string& path, const Image& image);

}  // namespace ordo::teach
