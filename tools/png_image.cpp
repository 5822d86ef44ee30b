#include "tools/png_image.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/errors.h"

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

Rgb Image::at(int x, int y) const {
  const uint8_t* p = &rgb[(size_t(y) * width + x) * 3];
  return {p[0], p[1], p[2]};
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

Image render(const Heatmap& h) {
  const int grid_w = h.cols * h.cell_w, grid_h = h.rows * h.cell_h;
  const int bar_x = kMargin + grid_w + kBarGap, bar_h = std::max(grid_h, 64);
  Image img(bar_x + kBarWidth + 12, kMargin + std::max(grid_h, bar_h) + 12, kWhite);
  auto colour = [&](double v) {
    const double f = h.hi > h.lo ? (v - h.lo) / (h.hi - h.lo) : 0.5;  // 0 at lo, 1 at hi
    return h.map == ColourMap::Diverging ? diverging(2 * f - 1) : sequential(f);
  };
  const int gap = h.cell_w >= 12 && h.cell_h >= 12 ? 1 : 0;  // white lines between large cells
  for (int r = 0; r < h.rows; ++r)
    for (int c = 0; c < h.cols; ++c)
      img.fill(kMargin + c * h.cell_w, kMargin + r * h.cell_h, h.cell_w - gap, h.cell_h - gap,
               colour(h.values[size_t(r) * h.cols + c]));
  // Ticks at every 10th row and column boundary, longer at every 50th.
  for (int c = 0; c <= h.cols; c += 10)
    img.fill(kMargin + c * h.cell_w, kMargin - (c % 50 ? 6 : 14), 1, c % 50 ? 5 : 13, kInk);
  for (int r = 0; r <= h.rows; r += 10)
    img.fill(kMargin - (r % 50 ? 6 : 14), kMargin + r * h.cell_h, r % 50 ? 5 : 13, 1, kInk);
  // The colour bar: hi at the top, lo at the bottom, ticks at the ends and the middle.
  for (int y = 0; y < bar_h; ++y)
    img.fill(bar_x, kMargin + y, kBarWidth, 1, colour(h.hi - (h.hi - h.lo) * (y + 0.5) / bar_h));
  img.fill(bar_x - 1, kMargin - 1, kBarWidth + 2, 1, kInk);
  img.fill(bar_x - 1, kMargin + bar_h, kBarWidth + 2, 1, kInk);
  img.fill(bar_x - 1, kMargin - 1, 1, bar_h + 2, kInk);
  img.fill(bar_x + kBarWidth, kMargin - 1, 1, bar_h + 2, kInk);
  for (int y : {kMargin, kMargin + bar_h / 2, kMargin + bar_h - 1}) img.fill(bar_x + kBarWidth, y, 6, 1, kInk);
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
                "wrote %s: %d x %d px. Rows: %s (top to bottom); columns: %s (left to right); each cell %d x %d px, "
                "tick marks every 10 cells (long every 50). Colour: %s, %s; the bar on the right runs from %.4g "
                "(top) to %.4g (bottom).\n",
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
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(path, "cannot create");
  bool ok = encode_png(f, image);
  ok = std::fflush(f) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "cannot write");
  }
}

}  // namespace ordo::teach
