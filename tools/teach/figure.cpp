#include "tools/teach/figure.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <pango/pangocairo.h>
#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <ordo/errors.h>

#include "common/atomic_file.h"

namespace ordo::teach {

// ---- colours --------------------------------------------------------------------------------

namespace {

Rgb mix(Rgb a, Rgb b, double f) {
  auto m = [f](uint8_t x, uint8_t y) { return static_cast<uint8_t>(std::lround(x + (double(y) - x) * f)); };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b)};
}

// Piecewise-linear through evenly spaced stops; f in [0, 1].
template <size_t N>
Rgb ramp(const Rgb (&stops)[N], double f) {
  f = std::clamp(f, 0.0, 1.0) * (N - 1);
  const size_t i = std::min(size_t(f), N - 2);
  return mix(stops[i], stops[i + 1], f - double(i));
}

}  // namespace

ColourMap map_for(double vmin, double vmax) {
  return vmin < 0 && vmax > 0 ? ColourMap::Diverging : ColourMap::Sequential;
}

Rgb diverging(double f) {
  static const Rgb stops[] = {{5, 48, 97}, {67, 147, 195}, {247, 247, 247}, {214, 96, 77}, {103, 0, 31}};
  return ramp(stops, f);
}

Rgb sequential(double f) {
  static const Rgb stops[] = {{255, 255, 255}, {158, 202, 225}, {33, 113, 181}, {8, 48, 107}};
  return ramp(stops, f);
}

Rgb colour_of(double v, double vmin, double vmax) {
  if (std::isnan(v)) return kMissing;
  const double f = vmax > vmin ? (v - vmin) / (vmax - vmin) : 0.5;
  return map_for(vmin, vmax) == ColourMap::Diverging ? diverging(f) : sequential(f);
}

void choose_cells(int rows, int cols, bool square, int* cell_w, int* cell_h, int target) {
  auto fit = [target](int n) { return std::clamp(target / std::max(n, 1), 1, 48); };
  *cell_w = fit(cols);
  *cell_h = fit(rows);
  if (square) *cell_w = *cell_h = std::min(*cell_w, *cell_h);
}

std::string short_number(double v) {
  if (std::fabs(v) < 1e-12) v = 0;  // no "-0" or "1e-17" at a tick that is meant to be 0
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// ---- text -----------------------------------------------------------------------------------

namespace {

constexpr Rgb kInk{40, 40, 40}, kFrame{90, 90, 90}, kGrid{228, 228, 228}, kWhite{255, 255, 255};
constexpr double kTitlePx = 17, kNamePx = 13, kTickPx = 11, kPad = 12;

void set_colour(cairo_t* cr, Rgb c) {
  cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

// A label as pango may take it: valid UTF-8 (each bad byte becomes U+FFFD), control characters
// as U+FFFD too, and at most `max_chars` characters (then "…").
std::string printable(const std::string& s, size_t max_chars = 1000) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && n > 1) ok = g_utf8_validate(s.data() + i, static_cast<gssize>(n), nullptr);
    if (++chars > max_chars) {
      out += "\xE2\x80\xA6";  // …
      break;
    }
    if (!ok || c < 0x20 || c == 0x7f) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += ok ? n : 1;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

// One pango layout on a cairo context: set the text, measure it, draw it anchored.
class Text {
 public:
  explicit Text(cairo_t* cr) : cr_(cr), layout_(pango_cairo_create_layout(cr)) {
    // No hinting: the same advance widths on every surface (PNG and SVG) and at every size.
    cairo_font_options_t* fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    pango_cairo_context_set_font_options(pango_layout_get_context(layout_), fo);
    cairo_font_options_destroy(fo);
    pango_layout_context_changed(layout_);
  }
  ~Text() { g_object_unref(layout_); }
  Text(const Text&) = delete;
  Text& operator=(const Text&) = delete;

  Text& set(const std::string& s, double px, bool bold = false) {
    PangoFontDescription* font = pango_font_description_from_string("DejaVu Sans");
    pango_font_description_set_absolute_size(font, px * PANGO_SCALE);
    if (bold) pango_font_description_set_weight(font, PANGO_WEIGHT_BOLD);
    pango_layout_set_font_description(layout_, font);
    pango_font_description_free(font);
    const std::string text = printable(s);
    pango_layout_set_text(layout_, text.data(), static_cast<int>(text.size()));
    PangoRectangle logical;
    pango_layout_get_extents(layout_, nullptr, &logical);
    w_ = logical.width / double(PANGO_SCALE);
    h_ = logical.height / double(PANGO_SCALE);
    return *this;
  }
  int unknown() const { return pango_layout_get_unknown_glyphs_count(layout_); }
  double w() const { return w_; }
  double h() const { return h_; }

  // Draws the text so that the point (ax, ay) of its box (0 = left/top, 1 = right/bottom) lands on
  // (x, y). `up`: turned a quarter left, reading bottom to top; the box is then h wide, w tall.
  void draw(double x, double y, double ax, double ay, bool up = false, Rgb colour = kInk) {
    const double bw = up ? h_ : w_, bh = up ? w_ : h_;
    cairo_save(cr_);
    set_colour(cr_, colour);
    cairo_translate(cr_, x - ax * bw, y - ay * bh);
    if (up) {
      cairo_translate(cr_, 0, bh);
      cairo_rotate(cr_, -M_PI / 2);
    }
    cairo_move_to(cr_, 0, 0);
    pango_cairo_update_layout(cr_, layout_);
    pango_cairo_show_layout(cr_, layout_);
    cairo_restore(cr_);
  }

 private:
  cairo_t* cr_;
  PangoLayout* layout_;
  double w_ = 0, h_ = 0;
};

// ---- ticks ----------------------------------------------------------------------------------

// Round numbers in [lo, hi], about `want` of them, 1, 2 or 5 times a power of ten apart.
double nice_step(double lo, double hi, int want) {
  const double raw = (hi - lo) / std::max(want, 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p * 1.0000001) return m * p;
  return 10 * p;
}

std::vector<double> ticks(double lo, double hi, int want) {
  const double step = nice_step(lo, hi, want);
  std::vector<double> out;
  const double eps = step * 1e-9;
  for (double k = std::ceil((lo - eps) / step); k * step <= hi + eps; ++k) out.push_back(k * step);
  return out;
}

// ---- writing --------------------------------------------------------------------------------

struct PngText {
  std::string key, value;
};

void append_bytes(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
void no_flush(png_structp) {}

// 8-bit RGB rows as a PNG with text chunks. libpng reports errors by longjmp; nothing with a
// destructor lives in this frame and nothing it reads after setjmp changes.
bool encode_png(const png_bytep* rows, png_uint_32 w, png_uint_32 h, const png_text* texts, int n_texts,
                std::string* out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, append_bytes, no_flush);
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_text(png, info, texts, n_texts);
  png_set_compression_level(png, 9);
  png_set_rows(png, info, const_cast<png_bytepp>(rows));
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

// An opaque cairo ARGB32 surface as a PNG: the premultiplied channels are the colour itself.
bool encode_png(cairo_surface_t* surface, const std::vector<png_text>& texts, std::string* out) {
  const int w = cairo_image_surface_get_width(surface), h = cairo_image_surface_get_height(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  std::vector<png_byte> rgb(static_cast<size_t>(w) * h * 3);
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int y = 0; y < h; ++y) {
    const uint32_t* px = reinterpret_cast<const uint32_t*>(data + size_t(y) * stride);
    png_bytep row = rows[y] = rgb.data() + size_t(y) * w * 3;
    for (int x = 0; x < w; ++x)
      row[3 * x] = uint8_t(px[x] >> 16), row[3 * x + 1] = uint8_t(px[x] >> 8), row[3 * x + 2] = uint8_t(px[x]);
  }
  return encode_png(rows.data(), png_uint_32(w), png_uint_32(h), texts.data(), int(texts.size()), out);
}

cairo_status_t append_stream(void* closure, const unsigned char* data, unsigned int n) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), n);
  return CAIRO_STATUS_SUCCESS;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    const char* entity = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : nullptr;
    if (entity)
      out += entity;
    else
      out += c;
  }
  return out;
}

// Draws with `paint` on a surface of the planned size and writes it to `path` in its format.
template <class Paint>
void render(const std::string& path, const Drawn& d, const std::string& title, const std::vector<PngText>& meta,
            Paint paint) {
  const std::string format = picture_format(path);
  std::string bytes;
  if (format == "png") {
    cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, d.width, d.height);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
      cairo_surface_destroy(s);
      throw InputError(path, "a picture of " + std::to_string(d.width) + " x " + std::to_string(d.height) +
                                 " px is more than this machine can draw");
    }
    cairo_t* cr = cairo_create(s);
    paint(cr);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    std::vector<png_text> texts;
    std::vector<PngText> all = {{"Title", title}, {"Software", "ordo"}};
    all.insert(all.end(), meta.begin(), meta.end());
    for (auto& t : all) {
      png_text p{};
      p.compression = PNG_TEXT_COMPRESSION_NONE;
      if (t.key == "Title") {  // the title may be any UTF-8: an international text chunk
        p.compression = PNG_ITXT_COMPRESSION_NONE;
        p.lang = const_cast<char*>("");
        p.lang_key = const_cast<char*>("");
      }
      p.key = const_cast<char*>(t.key.c_str());
      p.text = const_cast<char*>(t.value.c_str());
      p.text_length = t.value.size();
      texts.push_back(p);
    }
    const bool ok = encode_png(s, texts, &bytes);
    cairo_surface_destroy(s);
    if (!ok) throw InputError(path, "cannot encode the PNG");
  } else {
    std::string svg;
    cairo_surface_t* s = cairo_svg_surface_create_for_stream(append_stream, &svg, d.width, d.height);
    cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
    cairo_t* cr = cairo_create(s);
    paint(cr);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    const bool ok = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(s);
    if (!ok) throw InputError(path, "cannot draw the SVG");
    // The title for browsers and screen readers, and the layout numbers as the PNG carries them.
    const size_t open = svg.find("<svg"), end = open == std::string::npos ? open : svg.find('>', open);
    if (end == std::string::npos) throw InputError(path, "cannot draw the SVG");
    std::string head = "\n<title>" + xml_escape(printable(title)) + "</title>\n<metadata>";
    for (const auto& m : meta) head += "<ordo key=\"" + m.key + "\" value=\"" + xml_escape(m.value) + "\"/>";
    head += "</metadata>";
    svg.insert(end + 1, head);
    // Cells are squares of colour, not a photograph: browsers are told not to smooth them.
    for (size_t at = 0; (at = svg.find("<image ", at)) != std::string::npos; at += 7)
      svg.insert(at + 7, "style=\"image-rendering:pixelated;image-rendering:crisp-edges\" ");
    bytes = std::move(svg);
  }
  write_atomically(path, [&](std::FILE* f) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
      throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  });
}

// Numbers for the text chunks: as many digits as they need.
std::string numbers(std::initializer_list<double> v) {
  std::string out;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.10g", out.empty() ? "" : " ", x);
    out += buf;
  }
  return out;
}

// Every how many cells a numbered axis gets a number: 1, 2, 5, 10, 20, 50, ...
int next_step(int step) {
  int p = 1;
  while (step >= 10 * p) p *= 10;
  return step == p ? 2 * p : step == 2 * p ? 5 * p : 10 * p;
}

// A scratch context to measure text on before the picture's size is known.
struct Scratch {
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t* cr = cairo_create(s);
  ~Scratch() {
    cairo_destroy(cr);
    cairo_surface_destroy(s);
  }
};

void frame(cairo_t* cr, double x, double y, double w, double h) {  // a 1-px line just outside the box
  set_colour(cr, kFrame);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x - 0.5, y - 0.5, w + 1, h + 1);
  cairo_stroke(cr);
}

// An image of one pixel per value, drawn scaled without smoothing.
void paint_cells(cairo_t* cr, int x, int y, int cols, int rows, int cell_w, int cell_h,
                 const std::vector<Rgb>& colours) {
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
  const int stride = cairo_image_surface_get_stride(img);
  cairo_surface_flush(img);
  unsigned char* data = cairo_image_surface_get_data(img);
  for (int r = 0; r < rows; ++r) {
    uint32_t* px = reinterpret_cast<uint32_t*>(data + size_t(r) * stride);
    for (int c = 0; c < cols; ++c) {
      const Rgb& k = colours[size_t(r) * cols + c];
      px[c] = 0xFF000000u | uint32_t(k.r) << 16 | uint32_t(k.g) << 8 | k.b;
    }
  }
  cairo_surface_mark_dirty(img);
  cairo_save(cr);
  cairo_rectangle(cr, x, y, double(cols) * cell_w, double(rows) * cell_h);
  cairo_clip(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, cell_w, cell_h);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

}  // namespace

std::string picture_format(const std::string& path) {
  const size_t dot = path.rfind('.'), slash = path.rfind('/');
  std::string ext = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : path.substr(dot + 1);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext != "png" && ext != "svg")
    throw InputError(path, "a picture's name must end in .png or .svg (the format it is written in)");
  return ext;
}

int unknown_glyphs(const std::string& text) {
  Scratch scratch;
  Text t(scratch.cr);
  return t.set(text, kNamePx).unknown();
}

// ---- heatmap --------------------------------------------------------------------------------

Drawn draw(const std::string& path, const Figure& figure, const Heatmap& in) {
  picture_format(path);
  if (in.rows <= 0 || in.cols <= 0 || in.values.size() != size_t(in.rows) * in.cols)
    throw std::invalid_argument("heatmap: values do not fill rows x cols");
  if (!(in.vmin < in.vmax)) throw std::invalid_argument("heatmap: vmin must be below vmax");
  if ((!in.row_labels.empty() && int(in.row_labels.size()) != in.rows) ||
      (!in.col_labels.empty() && int(in.col_labels.size()) != in.cols))
    throw std::invalid_argument("heatmap: one label per row and per column");
  Heatmap h = in;
  if (h.cell_w <= 0 || h.cell_h <= 0) choose_cells(h.rows, h.cols, false, &h.cell_w, &h.cell_h);

  Scratch scratch;
  Text t(scratch.cr);
  // Names beside the rows and under the columns when the cells are tall (wide) enough for a
  // readable font, else a numbered tick every few cells.
  const double row_px = std::min(12.0, h.cell_h - 2.0), col_px = std::min(12.0, h.cell_w - 2.0);
  const bool named_rows = !h.row_labels.empty() && row_px >= 8, named_cols = !h.col_labels.empty() && col_px >= 8;
  constexpr size_t kLabelChars = 14;
  double row_label_w = 0, col_label_h = 0;
  int row_step = 1, col_step = 1;
  if (named_rows) {
    for (const auto& l : h.row_labels)
      row_label_w = std::max(row_label_w, t.set(printable(l, kLabelChars), row_px).w());
  } else {
    row_label_w = t.set(std::to_string(h.rows - 1), kTickPx).w();
    const double need = 1.6 * t.h();
    while (row_step * h.cell_h < need) row_step = next_step(row_step);
  }
  if (named_cols) {
    for (const auto& l : h.col_labels)
      col_label_h = std::max(col_label_h, t.set(printable(l, kLabelChars), col_px).w());
  } else {
    const double widest = t.set(std::to_string(h.cols - 1), kTickPx).w();
    col_label_h = t.h();
    while (col_step * h.cell_w < widest + 12) col_step = next_step(col_step);
  }
  const double title_h = figure.title.empty() ? 0 : t.set(figure.title, kTitlePx, true).h();
  const double title_w = figure.title.empty() ? 0 : t.w();
  const double yname_w = figure.y_name.empty() ? 0 : t.set(figure.y_name, kNamePx).h();
  const double xname_h = figure.x_name.empty() ? 0 : t.set(figure.x_name, kNamePx).h();
  const double barname_w = h.value_name.empty() ? 0 : t.set(h.value_name, kNamePx).h();
  const std::vector<double> bar_ticks = ticks(h.vmin, h.vmax, 5);
  double bar_label_w = 0;
  for (double v : bar_ticks) bar_label_w = std::max(bar_label_w, t.set(short_number(v), kTickPx).w());

  Drawn d;
  d.cell_w = h.cell_w, d.cell_h = h.cell_h;
  d.plot_w = h.cols * h.cell_w, d.plot_h = h.rows * h.cell_h;
  d.plot_x = int(std::ceil(kPad + (yname_w ? yname_w + 6 : 0) + row_label_w + 8));
  d.plot_y = int(std::ceil(kPad + (title_h ? title_h + 10 : 0)));
  d.bar_x = d.plot_x + d.plot_w + 18, d.bar_y = d.plot_y, d.bar_w = 16, d.bar_h = std::max(d.plot_h, 160);
  const double right = d.bar_x + d.bar_w + 6 + bar_label_w + (barname_w ? 8 + barname_w : 0) + kPad;
  const double bottom = d.plot_y + std::max(double(d.bar_h), d.plot_h + 6 + col_label_h + (xname_h ? 6 + xname_h : 0));
  d.width = int(std::ceil(std::max(right, title_w + 2 * kPad)));
  d.height = int(std::ceil(bottom + kPad));

  std::vector<Rgb> cells(h.values.size());
  for (size_t n = 0; n < cells.size(); ++n) cells[n] = colour_of(h.values[n], h.vmin, h.vmax);
  std::vector<Rgb> bar(size_t(d.bar_h));
  for (int y = 0; y < d.bar_h; ++y)
    bar[y] = colour_of(h.vmax - (h.vmax - h.vmin) * (y + 0.5) / d.bar_h, h.vmin, h.vmax);

  auto paint = [&](cairo_t* cr) {
    Text t(cr);
    set_colour(cr, kWhite);
    cairo_paint(cr);
    if (!figure.title.empty()) t.set(figure.title, kTitlePx, true).draw(d.width / 2.0, kPad, 0.5, 0);
    paint_cells(cr, d.plot_x, d.plot_y, h.cols, h.rows, h.cell_w, h.cell_h, cells);
    if (h.cell_w >= 12 && h.cell_h >= 12) {  // white lines between large cells
      set_colour(cr, kWhite);
      for (int c = 1; c <= h.cols; ++c) cairo_rectangle(cr, d.plot_x + c * h.cell_w - 1, d.plot_y, 1, d.plot_h);
      for (int r = 1; r <= h.rows; ++r) cairo_rectangle(cr, d.plot_x, d.plot_y + r * h.cell_h - 1, d.plot_w, 1);
      cairo_fill(cr);
    }
    if (h.show_values && h.cell_w >= 40 && h.cell_h >= 24)
      for (int r = 0; r < h.rows; ++r)
        for (int c = 0; c < h.cols; ++c) {
          const double v = h.values[size_t(r) * h.cols + c];
          const Rgb k = cells[size_t(r) * h.cols + c];
          const bool dark = 0.299 * k.r + 0.587 * k.g + 0.114 * k.b < 140;  // luma (ITU-R BT.601)
          char text[16];
          std::snprintf(text, sizeof text, "%.2f", v);
          t.set(text, std::min(12.0, h.cell_h / 3.0))
              .draw(d.plot_x + (c + 0.5) * h.cell_w, d.plot_y + (r + 0.5) * h.cell_h, 0.5, 0.5, false,
                    dark ? kWhite : kInk);
        }
    frame(cr, d.plot_x, d.plot_y, d.plot_w, d.plot_h);
    set_colour(cr, kFrame);
    // Rows: names, or ticks with numbers at the middle of their cells.
    for (int r = 0; r < h.rows; ++r) {
      const double y = d.plot_y + (r + 0.5) * h.cell_h;
      if (named_rows) {
        t.set(printable(h.row_labels[r], kLabelChars), row_px).draw(d.plot_x - 6, y, 1, 0.5);
      } else if (r % row_step == 0) {
        cairo_rectangle(cr, d.plot_x - 5, std::floor(y), 4, 1);
        cairo_fill(cr);
        t.set(std::to_string(r), kTickPx).draw(d.plot_x - 7, y, 1, 0.5);
      }
    }
    const double below = d.plot_y + d.plot_h;
    for (int c = 0; c < h.cols; ++c) {
      const double x = d.plot_x + (c + 0.5) * h.cell_w;
      if (named_cols) {
        t.set(printable(h.col_labels[c], kLabelChars), col_px).draw(x, below + 6, 0.5, 0, true);
      } else if (c % col_step == 0) {
        set_colour(cr, kFrame);
        cairo_rectangle(cr, std::floor(x), below + 1, 1, 4);
        cairo_fill(cr);
        t.set(std::to_string(c), kTickPx).draw(x, below + 6, 0.5, 0);
      }
    }
    if (!figure.x_name.empty())
      t.set(figure.x_name, kNamePx).draw(d.plot_x + d.plot_w / 2.0, below + 6 + col_label_h + 6, 0.5, 0);
    if (!figure.y_name.empty()) t.set(figure.y_name, kNamePx).draw(kPad, d.plot_y + d.plot_h / 2.0, 0, 0.5, true);
    // The colour bar, vmax at its top, with round numbers and the value's name.
    paint_cells(cr, d.bar_x, d.bar_y, 1, d.bar_h, d.bar_w, 1, bar);
    frame(cr, d.bar_x, d.bar_y, d.bar_w, d.bar_h);
    for (double v : bar_ticks) {
      const double y = d.bar_y + (h.vmax - v) / (h.vmax - h.vmin) * d.bar_h;
      set_colour(cr, kFrame);
      cairo_rectangle(cr, d.bar_x + d.bar_w + 1, std::clamp(std::floor(y), double(d.bar_y), d.bar_y + d.bar_h - 1.0), 4,
                      1);
      cairo_fill(cr);
      t.set(short_number(v), kTickPx).draw(d.bar_x + d.bar_w + 7, y, 0, 0.5);
    }
    if (!h.value_name.empty())
      t.set(h.value_name, kNamePx).draw(d.bar_x + d.bar_w + 6 + bar_label_w + 8, d.bar_y + d.bar_h / 2.0, 0, 0.5, true);
  };
  render(path, d, figure.title,
         {{"ordo:plot", numbers({double(d.plot_x), double(d.plot_y), double(d.plot_w), double(d.plot_h)})},
          {"ordo:cells", numbers({double(h.rows), double(h.cols), double(h.cell_w), double(h.cell_h)})},
          {"ordo:bar", numbers({double(d.bar_x), double(d.bar_y), double(d.bar_w), double(d.bar_h)})},
          {"ordo:scale", numbers({h.vmin, h.vmax}) +
                             (map_for(h.vmin, h.vmax) == ColourMap::Diverging ? " diverging" : " sequential")}},
         paint);
  return d;
}

std::string describe(const std::string& path, const Figure& figure, const Heatmap& h, const Drawn& d,
                     const std::string& rows_are, const std::string& cols_are) {
  const double mid = (h.vmin + h.vmax) / 2;
  const std::string scale = map_for(h.vmin, h.vmax) == ColourMap::Diverging
                                ? "dark blue = " + short_number(h.vmin) + ", white = " + short_number(mid) +
                                      ", dark red = " + short_number(h.vmax)
                                : "white = " + short_number(h.vmin) + ", mid blue = " + short_number(mid) +
                                      ", dark blue = " + short_number(h.vmax);
  size_t outside = 0;  // beyond float rounding: a cosine of 1.0000001 is on the scale
  const double eps = 1e-6 * (h.vmax - h.vmin);
  for (double v : h.values) outside += v < h.vmin - eps || v > h.vmax + eps;
  std::string out = "wrote " + path;
  if (!figure.title.empty()) out += ", \"" + figure.title + "\"";
  out += ". Rows: " + rows_are + " (top to bottom); columns: " + cols_are + " (left to right); each cell " +
         std::to_string(d.cell_w) + " x " + std::to_string(d.cell_h) +
         " px. Colour: " + (h.value_name.empty() ? "the value" : h.value_name) + " on a fixed scale, " + scale +
         " (the bar on the right; --vmin/--vmax set it)";
  if (outside)
    out += "; " + std::to_string(outside) + (outside == 1 ? " value lies" : " values lie") +
           " outside it and take the colour of the nearer end";
  return out + ".\n";
}

// ---- line chart -----------------------------------------------------------------------------

namespace {

// Okabe and Ito's colours that read on white and apart for colour-blind eyes.
constexpr Rgb kLineColours[] = {{0, 114, 178}, {213, 94, 0},   {0, 158, 115}, {204, 121, 167},
                                {230, 159, 0}, {86, 180, 233}, {0, 0, 0}};

// A series' colour: its palette entry, or a shade of it halfway to white.
Rgb series_colour(const Series& s, size_t k) {
  const Rgb c = kLineColours[size_t(s.colour >= 0 ? s.colour : int(k)) % std::size(kLineColours)];
  if (!s.light) return c;
  auto pale = [](uint8_t v) { return uint8_t(v + (255 - v) * 11 / 20); };
  return {pale(c.r), pale(c.g), pale(c.b)};
}

}  // namespace

Drawn draw(const std::string& path, const Figure& figure, const LineChart& chart) {
  picture_format(path);
  if (chart.plot_w < 50 || chart.plot_h < 50) throw std::invalid_argument("line chart: plot smaller than 50 px");
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const Series& s : chart.series) {
    if (s.x.size() != s.y.size())
      throw std::invalid_argument("line chart: x and y of \"" + s.name + "\" differ in length");
    if ((!s.lo.empty() && s.lo.size() != s.x.size()) || (!s.hi.empty() && s.hi.size() != s.x.size()) ||
        (!s.notes.empty() && s.notes.size() != s.x.size()))
      throw std::invalid_argument("line chart: intervals or notes of \"" + s.name + "\" differ in length");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i])) continue;
      xlo = std::min(xlo, s.x[i]), xhi = std::max(xhi, s.x[i]);
      if (std::isfinite(s.y[i])) ylo = std::min(ylo, s.y[i]), yhi = std::max(yhi, s.y[i]);
      if (!s.hi.empty() && std::isfinite(s.hi[i])) yhi = std::max(yhi, s.hi[i]);
    }
  }
  if (std::isfinite(chart.marker_x)) xlo = std::min(xlo, chart.marker_x), xhi = std::max(xhi, chart.marker_x);
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1;
  if (!std::isfinite(ylo)) ylo = 0, yhi = 1;
  if (xhi == xlo) xlo -= 0.5, xhi += 0.5;
  if (yhi == ylo) ylo -= 0.5, yhi += 0.5;
  // y from the data: out to the round numbers around it.
  if (std::isnan(chart.y_min) || std::isnan(chart.y_max)) {
    const double step = nice_step(ylo, yhi, 5);
    ylo = std::floor(ylo / step + 1e-9) * step, yhi = std::ceil(yhi / step - 1e-9) * step;
  }
  Drawn d;
  d.x_min = std::isnan(chart.x_min) ? xlo : chart.x_min, d.x_max = std::isnan(chart.x_max) ? xhi : chart.x_max;
  d.y_min = std::isnan(chart.y_min) ? ylo : chart.y_min, d.y_max = std::isnan(chart.y_max) ? yhi : chart.y_max;
  if (!(d.x_min < d.x_max) || !(d.y_min < d.y_max))
    throw std::invalid_argument("line chart: an axis ends before it starts");
  const std::vector<double> xt = ticks(d.x_min, d.x_max, 8), yt = ticks(d.y_min, d.y_max, 6);

  Scratch scratch;
  Text t(scratch.cr);
  const double title_h = figure.title.empty() ? 0 : t.set(figure.title, kTitlePx, true).h();
  const double title_w = figure.title.empty() ? 0 : t.w();
  const double yname_w = figure.y_name.empty() ? 0 : t.set(figure.y_name, kNamePx).h();
  const double xname_h = figure.x_name.empty() ? 0 : t.set(figure.x_name, kNamePx).h();
  double ylabel_w = 0, legend_w = 0;
  for (double v : yt) ylabel_w = std::max(ylabel_w, t.set(short_number(v), kTickPx).w());
  const double tick_h = t.set("0", kTickPx).h();
  for (const Series& s : chart.series) legend_w = std::max(legend_w, t.set(s.name, kNamePx).w());
  const double row_h = t.set("Ag", kNamePx).h() + 4;
  const bool legend = !chart.series.empty();

  d.plot_w = chart.plot_w, d.plot_h = chart.plot_h;
  d.plot_x = int(std::ceil(kPad + (yname_w ? yname_w + 8 : 0) + ylabel_w + 8));
  d.plot_y = int(std::ceil(kPad + (title_h ? title_h + 10 : 0)));
  const double legend_x = d.plot_x + d.plot_w + 16;
  const double right = legend ? legend_x + 30 + legend_w + kPad : d.plot_x + d.plot_w + kPad;
  const double legend_bottom = d.plot_y + row_h * chart.series.size();
  d.width = int(std::ceil(std::max(right, title_w + 2 * kPad)));
  d.height =
      int(std::ceil(std::max(legend_bottom, d.plot_y + d.plot_h + 6 + tick_h + (xname_h ? 6 + xname_h : 0)) + kPad));

  auto X = [&](double x) { return d.plot_x + (x - d.x_min) / (d.x_max - d.x_min) * d.plot_w; };
  auto Y = [&](double y) { return d.plot_y + (d.y_max - y) / (d.y_max - d.y_min) * d.plot_h; };
  auto paint = [&](cairo_t* cr) {
    Text t(cr);
    set_colour(cr, kWhite);
    cairo_paint(cr);
    if (!figure.title.empty()) t.set(figure.title, kTitlePx, true).draw(d.width / 2.0, kPad, 0.5, 0);
    // Grid lines and ticks at round numbers.
    cairo_set_line_width(cr, 1);
    for (double v : xt) {
      const double x = std::floor(X(v)) + 0.5;
      set_colour(cr, kGrid);
      cairo_move_to(cr, x, d.plot_y), cairo_line_to(cr, x, d.plot_y + d.plot_h), cairo_stroke(cr);
      set_colour(cr, kFrame);
      cairo_move_to(cr, x, d.plot_y + d.plot_h), cairo_line_to(cr, x, d.plot_y + d.plot_h + 4), cairo_stroke(cr);
      t.set(short_number(v), kTickPx).draw(X(v), d.plot_y + d.plot_h + 6, 0.5, 0);
    }
    for (double v : yt) {
      const double y = std::floor(Y(v)) + 0.5;
      set_colour(cr, kGrid);
      cairo_move_to(cr, d.plot_x, y), cairo_line_to(cr, d.plot_x + d.plot_w, y), cairo_stroke(cr);
      set_colour(cr, kFrame);
      cairo_move_to(cr, d.plot_x - 4, y), cairo_line_to(cr, d.plot_x, y), cairo_stroke(cr);
      t.set(short_number(v), kTickPx).draw(d.plot_x - 7, Y(v), 1, 0.5);
    }
    frame(cr, d.plot_x, d.plot_y, d.plot_w, d.plot_h);
    if (!figure.x_name.empty())
      t.set(figure.x_name, kNamePx).draw(d.plot_x + d.plot_w / 2.0, d.plot_y + d.plot_h + 6 + tick_h + 6, 0.5, 0);
    if (!figure.y_name.empty()) t.set(figure.y_name, kNamePx).draw(kPad, d.plot_y + d.plot_h / 2.0, 0, 0.5, true);
    cairo_save(cr);
    cairo_rectangle(cr, d.plot_x, d.plot_y, d.plot_w, d.plot_h);
    cairo_clip(cr);
    if (std::isfinite(chart.marker_x)) {
      const double x = std::floor(X(chart.marker_x)) + 0.5;
      const double dash[] = {6, 4};
      set_colour(cr, kFrame);
      cairo_set_dash(cr, dash, 2, 0);
      cairo_move_to(cr, x, d.plot_y), cairo_line_to(cr, x, d.plot_y + d.plot_h), cairo_stroke(cr);
      cairo_set_dash(cr, nullptr, 0, 0);
      if (!chart.marker_label.empty()) {
        t.set(chart.marker_label, kTickPx);
        const bool left = x + 4 + t.w() > d.plot_x + d.plot_w;  // beside the line, inside the plot
        set_colour(cr, kWhite);
        cairo_rectangle(cr, left ? x - 4 - t.w() : x + 3, d.plot_y + 3, t.w() + 2, t.h());
        cairo_fill(cr);
        t.draw(left ? x - 3 : x + 4, d.plot_y + 3, left ? 1 : 0, 0);
      }
    }
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    // Bars: a slot in each group for every series that has points (a series without any is in the
    // legend only).
    size_t slots = 0;
    for (const Series& s : chart.series) slots += !s.x.empty();
    const double bar_w = chart.bars ? chart.bar_group / std::max<size_t>(1, slots) : 0;
    for (size_t k = 0, slot = 0; chart.bars && k < chart.series.size(); ++k) {
      const Series& s = chart.series[k];
      if (s.x.empty()) continue;
      const double offset = -chart.bar_group / 2 + bar_w * slot++;
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        const double x0 = X(s.x[i] + offset), x1 = X(s.x[i] + offset + bar_w);
        set_colour(cr, series_colour(s, k));
        cairo_rectangle(cr, x0 + 0.5, Y(s.y[i]), x1 - x0 - 1, Y(d.y_min) - Y(s.y[i]));
        cairo_fill(cr);
        const double xc = (x0 + x1) / 2;
        if (!s.lo.empty() && std::isfinite(s.lo[i]) && std::isfinite(s.hi[i])) {  // the interval
          set_colour(cr, kInk);
          cairo_set_line_width(cr, 1.5);
          cairo_move_to(cr, xc, Y(s.lo[i])), cairo_line_to(cr, xc, Y(s.hi[i]));
          cairo_move_to(cr, xc - 3, Y(s.lo[i])), cairo_line_to(cr, xc + 3, Y(s.lo[i]));
          cairo_move_to(cr, xc - 3, Y(s.hi[i])), cairo_line_to(cr, xc + 3, Y(s.hi[i]));
          cairo_stroke(cr);
        }
        if (!s.notes.empty() && !s.notes[i].empty()) {  // over the whole group at this x, above its tallest bar
          double top = -INFINITY;
          for (const Series& o : chart.series)
            for (size_t n = 0; n < o.x.size(); ++n)
              if (o.x[n] == s.x[i] && std::isfinite(o.y[n]))
                top = std::max({top, o.y[n], !o.hi.empty() && std::isfinite(o.hi[n]) ? o.hi[n] : o.y[n]});
          set_colour(cr, kInk);
          t.set(s.notes[i], kTickPx).draw(X(s.x[i]), Y(top) - 3, 0.5, 1);
        }
      }
    }
    for (size_t k = 0; !chart.bars && k < chart.series.size(); ++k) {
      const Series& s = chart.series[k];
      set_colour(cr, series_colour(s, k));
      cairo_set_line_width(cr, 2);
      bool open = false;
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
          open = false;
          continue;
        }
        (open ? cairo_line_to : cairo_move_to)(cr, X(s.x[i]), Y(s.y[i]));
        open = true;
      }
      cairo_stroke(cr);
      if (s.x.size() <= 60)  // few points: each one marked
        for (size_t i = 0; i < s.x.size(); ++i)
          if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
            cairo_arc(cr, X(s.x[i]), Y(s.y[i]), 3, 0, 2 * M_PI);
            cairo_fill(cr);
          }
    }
    cairo_restore(cr);
    for (size_t k = 0; k < chart.series.size(); ++k) {  // the legend, right of the plot
      const double y = d.plot_y + row_h * (k + 0.5);
      set_colour(cr, series_colour(chart.series[k], k));
      if (chart.bars) {
        cairo_rectangle(cr, legend_x + 4, y - 6, 14, 12);
        cairo_fill(cr);
      } else {
        cairo_set_line_width(cr, 2);
        cairo_move_to(cr, legend_x, y), cairo_line_to(cr, legend_x + 22, y), cairo_stroke(cr);
        cairo_arc(cr, legend_x + 11, y, 3, 0, 2 * M_PI);
        cairo_fill(cr);
      }
      t.set(chart.series[k].name, kNamePx).draw(legend_x + 30, y, 0, 0.5);
    }
  };
  render(path, d, figure.title,
         {{"ordo:plot", numbers({double(d.plot_x), double(d.plot_y), double(d.plot_w), double(d.plot_h)})},
          {"ordo:axes", numbers({d.x_min, d.x_max, d.y_min, d.y_max})}},
         paint);
  return d;
}

}  // namespace ordo::teach
