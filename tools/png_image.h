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
  Rgb at(int x, int y) const;
};

// Colour maps. diverging: −1 dark blue, 0 near-white, +1 dark red (ColorBrewer's RdBu stops,
// linearly interpolated); sequential: 0 white to 1 dark blue. Values outside clamp to the ends.
Rgb diverging(double v);
Rgb sequential(double v);

enum class ColourMap { Diverging, Sequential };

// A (rows, cols) table as cells of cell_w × cell_h pixels, row 0 at the top, with a margin, tick
// marks every 10 cells (longer every 50) on the top and left edges, and a colour bar on the right
// (`hi` at its top, `lo` at its bottom). Cells of 12 px or more are separated by 1 px white lines.
struct Heatmap {
  int rows, cols;
  std::vector<double> values;  // (rows, cols)
  double lo, hi;               // the values the colour map's ends stand for
  ColourMap map;
  int cell_w, cell_h;
};
Image render(const Heatmap& h);
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
