#include "tools/teach/png_image.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ordo/errors.h>

#include "common/atomic_file.h"

namespace ordo::teach {

namespace {

constexpr int kMargin = 24;    // room for the tick marks, left and top
constexpr int kBarGap = 16;    // between the table and the colour bar
constexpr int kBarWidth = 20;  // the colour bar
constexpr Rgb kWhite{255, 255, 255}, kInk{40, 40, 40};

Rgb mix(Rgb a, Rgb b, double f) {
  auto m = [f](uint8_t x, uint8_t y) { return static_cast<uint8_t>(std::lround(x + (double(y) - x) * f)); };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b)};
}

// Piecewise-linear through evenly spaced stops; v in [0, 1].
template <size_t N>
Rgb ramp(const Rgb (&stops)[N], double v) {
  v = std::clamp(std::isfinite(v) ? v : 0.5, 0.0, 1.0) * (N - 1);
  const size_t i = std::min(size_t(v), N - 2);
  return mix(stops[i], stops[i + 1], v - double(i));
}

}  // namespace

Image::Image(int w, int h, Rgb c) : width(w), height(h), rgb(size_t(w) * h * 3) {
  fill(0, 0, w, h, c);
}

void Image::fill(int x, int y, int w, int h, Rgb c) {
  for (int yy = std::max(y, 0); yy < std::min(y + h, height); ++yy)
    for (int xx = std::max(x, 0); xx < std::min(x + w, width); ++xx) {
      uint8_t* p = &rgb[(size_t(yy) * width + xx) * 3];
      p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

Rgb diverging(double v) {
  static const Rgb stops[] = {{5, 48, 97}, {67, 147, 195}, {247, 247, 247}, {214, 96, 77}, {103, 0, 31}};
  return ramp(stops, (v + 1.0) / 2.0);
}

Rgb sequential(double v) {
  static const Rgb stops[] = {{255, 255, 255}, {158, 202, 225}, {33, 113, 181}, {8, 48, 107}};
  return ramp(stops, v);
}

void choose_cells(int rows, int cols, bool square, int* cell_w, int* cell_h, int target) {
  auto fit = [target](int n) { return std::clamp(target / std::max(n, 1), 1, 48); };
  *cell_w = fit(cols);
  *cell_h = fit(rows);
  if (square) *cell_w = *cell_h = std::min(*cell_w, *cell_h);
}

namespace {

// A 5 × 7 pixel font for labels: digits, lower-case letters and a little punctuation. Each glyph is
// 7 rows of 5 bits, the leftmost pixel in bit 4. Upper case draws as lower case, anything else as '?'.
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}},
    {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'f', {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}},
    {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'z', {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {'\'', {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}},
    {'?', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},
};
constexpr int kAdvance = 6;  // glyph width 5 + 1 px space

const Glyph& glyph(char c) {
  if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  for (const Glyph& g : kFont)
    if (g.c == c) return g;
  return glyph('?');
}

// Text at (x, y) = its top-left corner, `scale` px per font pixel. Vertical text runs bottom to
// top (rotated a quarter turn left), its baseline on the right; (x, y) is then its bottom-left.
void draw_text(Image& img, int x, int y, const std::string& text, int scale, bool vertical = false) {
  for (size_t n = 0; n < text.size(); ++n) {
    const Glyph& g = glyph(text[n]);
    for (int r = 0; r < 7; ++r)
      for (int c = 0; c < 5; ++c) {
        if (!(g.rows[r] >> (4 - c) & 1)) continue;
        const int along = int(n) * kAdvance + c;
        if (vertical)
          img.fill(x + r * scale, y - (along + 1) * scale, scale, scale, kInk);
        else
          img.fill(x + along * scale, y + r * scale, scale, scale, kInk);
      }
  }
}

int text_width(const std::string& text, int scale) {
  return text.empty() ? 0 : (int(text.size()) * kAdvance - 1) * scale;
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Every how many cells a numbered axis gets a number: 10, 20, 50, 100, ... whatever leaves room.
int number_step(int cells, int cell_px, int widest_px) {
  for (int step : {10, 20, 50, 100, 200, 500, 1000, 2000, 5000})
    if (step * cell_px >= widest_px + 6 || step >= cells) return step;
  return 10000;
}

}  // namespace

std::string label_text(const std::string& piece) {
  std::string out;
  for (size_t i = 0; i < piece.size(); ++i) {
    const unsigned char c = piece[i];
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {  // U+2581 "▁", sentencepiece's word start
      out += '_';
      i += 2;
    } else if (c >= 0x80) {
      if ((c & 0xC0) != 0x80) out += '?';  // one '?' per non-ASCII character
    } else {
      out += char(c);
    }
  }
  return out.size() > 10 ? out.substr(0, 9) + "." : out;
}

Image render(const Heatmap& h) {
  // Names at twice the font size when the cells are tall enough, at its size when they are not,
  // and numbers instead when even that would overlap.
  auto name_scale = [](int cell) { return cell >= 16 ? 2 : cell >= 8 ? 1 : 0; };
  const int row_scale = h.row_labels.empty() ? 0 : name_scale(h.cell_h);
  const int col_scale = h.col_labels.empty() ? 0 : name_scale(h.cell_w);
  const bool named_rows = row_scale > 0, named_cols = col_scale > 0;
  int widest_row = text_width(std::to_string(h.rows), 1), tallest_col = 7;
  if (named_rows)
    for (const auto& l : h.row_labels) widest_row = std::max(widest_row, text_width(label_text(l), row_scale));
  if (named_cols) {
    tallest_col = 0;
    for (const auto& l : h.col_labels) tallest_col = std::max(tallest_col, text_width(label_text(l), col_scale));
  }
  const int left = std::max(kMargin, widest_row + 12), top = std::max(kMargin, tallest_col + 12);
  const std::string hi = short_number(h.hi), mid = short_number((h.lo + h.hi) / 2), lo = short_number(h.lo);
  const int bar_label = std::max({text_width(hi, 1), text_width(mid, 1), text_width(lo, 1)});
  const int grid_w = h.cols * h.cell_w, grid_h = h.rows * h.cell_h;
  const int bar_x = left + grid_w + kBarGap, bar_h = std::max(grid_h, 64);
  Image img(bar_x + kBarWidth + 10 + bar_label + 8, top + std::max(grid_h, bar_h) + 12, kWhite);
  auto colour = [&](double v) {
    const double f = h.hi > h.lo ? (v - h.lo) / (h.hi - h.lo) : 0.5;  // 0 at lo, 1 at hi
    return h.map == ColourMap::Diverging ? diverging(2 * f - 1) : sequential(f);
  };
  const int gap = h.cell_w >= 12 && h.cell_h >= 12 ? 1 : 0;  // white lines between large cells
  for (int r = 0; r < h.rows; ++r)
    for (int c = 0; c < h.cols; ++c)
      img.fill(left + c * h.cell_w, top + r * h.cell_h, h.cell_w - gap, h.cell_h - gap,
               colour(h.values[size_t(r) * h.cols + c]));

  // Rows: a name beside each row, or a tick every 10 rows and a number where there is room.
  if (named_rows) {
    for (int r = 0; r < h.rows; ++r) {
      const std::string l = label_text(h.row_labels[r]);
      draw_text(img, left - 6 - text_width(l, row_scale), top + r * h.cell_h + (h.cell_h - gap - 7 * row_scale) / 2, l,
                row_scale);
    }
  } else {
    const int every = number_step(h.rows, h.cell_h, 9);
    for (int r = 0; r <= h.rows; r += 10) {
      img.fill(left - 6, top + r * h.cell_h, 5, 1, kInk);
      if (r % every == 0 && r < h.rows)
        draw_text(img, left - 8 - text_width(std::to_string(r), 1), top + r * h.cell_h + 1, std::to_string(r), 1);
    }
  }
  // Columns: a name standing above each column, or ticks and numbers as for rows.
  if (named_cols) {
    for (int c = 0; c < h.cols; ++c)
      draw_text(img, left + c * h.cell_w + (h.cell_w - gap - 7 * col_scale) / 2, top - 6, label_text(h.col_labels[c]),
                col_scale, true);
  } else {
    const int every = number_step(h.cols, h.cell_w, text_width(std::to_string(h.cols), 1));
    for (int c = 0; c <= h.cols; c += 10) {
      img.fill(left + c * h.cell_w, top - 6, 1, 5, kInk);
      if (c % every == 0 && c < h.cols) draw_text(img, left + c * h.cell_w + 2, top - 15, std::to_string(c), 1);
    }
  }
  // The colour bar: hi at the top, lo at the bottom, ticks and numbers at the ends and the middle.
  for (int y = 0; y < bar_h; ++y)
    img.fill(bar_x, top + y, kBarWidth, 1, colour(h.hi - (h.hi - h.lo) * (y + 0.5) / bar_h));
  img.fill(bar_x - 1, top - 1, kBarWidth + 2, 1, kInk);
  img.fill(bar_x - 1, top + bar_h, kBarWidth + 2, 1, kInk);
  img.fill(bar_x - 1, top - 1, 1, bar_h + 2, kInk);
  img.fill(bar_x + kBarWidth, top - 1, 1, bar_h + 2, kInk);
  const int ys[] = {top, top + bar_h / 2, top + bar_h - 1};
  const std::string* texts[] = {&hi, &mid, &lo};
  for (int n = 0; n < 3; ++n) {
    img.fill(bar_x + kBarWidth, ys[n], 5, 1, kInk);
    draw_text(img, bar_x + kBarWidth + 8, std::clamp(ys[n] - 3, 0, img.height - 7), *texts[n], 1);
  }
  return img;
}

std::string describe(const Heatmap& h, const Image& image, const std::string& path, const std::string& rows_are,
                     const std::string& cols_are, const std::string& value_is) {
  char buf[1024];
  const char* scale = h.map == ColourMap::Diverging ? "dark blue = %.4g, white = %.4g, dark red = %.4g"
                                                    : "white = %.4g, mid blue = %.4g, dark blue = %.4g";
  char colours[256];
  std::snprintf(colours, sizeof colours, scale, h.lo, (h.lo + h.hi) / 2, h.hi);
  std::snprintf(buf, sizeof buf,
                "wrote %s: %d x %d px. Rows: %s (top to bottom); columns: %s (left to right); each cell %d x %d px. "
                "Colour: %s, %s; the bar on the right runs from %.4g (top) to %.4g (bottom).\n",
                path.c_str(), image.width, image.height, rows_are.c_str(), cols_are.c_str(), h.cell_w, h.cell_h,
                value_is.c_str(), colours, h.hi, h.lo);
  return buf;
}

namespace {

// libpng reports errors by longjmp; nothing here changes after setjmp, so nothing is clobbered.
bool encode_png(std::FILE* f, const Image& image) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, image.width, image.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y)
    png_write_row(png, const_cast<png_bytep>(image.rgb.data() + size_t(y) * image.width * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png(const std::string& path, const Image& image) {
  write_atomically(path, [&](std::FILE* f) {
    if (!encode_png(f, image)) throw InputError(path, "cannot write: libpng could not encode the image");
  });
}

}  // namespace ordo::teach
