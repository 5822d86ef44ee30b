// ordo command line: JSON numbers as short as the float they stand for.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ordo::cli {

// The shortest decimal that reads back as the same float (so 0.1f prints as 0.1, not as the
// double 0.10000000149011612).
inline double short_float(float f) {
  char buf[32];
#ifdef __EMSCRIPTEN__
  // emscripten's C++ library (3.1.6) has no to_chars for floats, and its printf and strtod work in
  // 128-bit soft floats (they took most of the page's time). The fewest significant digits p that read
  // back as f, without them: n = round(f·10^k) with k = p − 1 − ⌊log10 |f|⌋, and n·10^-k as a double
  // (one correctly rounded operation on exact operands: the double nearest that decimal, as strtod
  // reads it). Beyond the powers of ten a double holds exactly, the 9 digits of printf.
  (void)buf;
  if (!std::isfinite(f) || f == 0.0f) return double(f);
  const int e = int(std::floor(std::log10(std::fabs(double(f)))));
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  for (int p = 1; p <= 9; ++p) {
    const int k = p - 1 - e;
    if (k > 22 || k < -22) break;
    const double n = std::nearbyint(k >= 0 ? double(f) * kPow10[k] : double(f) / kPow10[-k]);
    const double v = k >= 0 ? n / kPow10[k] : n * kPow10[-k];
    if (float(v) == f) return v;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", double(f));
  return std::strtod(text, nullptr);
#else
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, f);
  *end = '\0';
  return ec == std::errc() ? std::strtod(buf, nullptr) : double(f);
#endif
}

// As a JSON array (nlohmann::json, or nlohmann::ordered_json where key order matters).
template <class Json = nlohmann::json>
Json json_floats(const float* v, size_t n) {
  Json a = Json::array();
  for (size_t i = 0; i < n; ++i) a.push_back(short_float(v[i]));
  return a;
}

// JSON text made safe to place inside an HTML <script> element: every '<', '>' and '&' is written
// \u003c, \u003e, \u0026, and U+2028, U+2029 as \u2028, \u2029 (the same strings in JSON), so no
// text can end the element ("</script"), open an HTML comment ("<!--", which with a later
// "<script" makes the parser read past the element's end) or break a JavaScript line. Those
// characters occur only inside JSON strings, where an escape means the same.
inline std::string json_for_html(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char ch = json[i];
    if (ch == '<')
      out += "\\u003c";
    else if (ch == '>')
      out += "\\u003e";
    else if (ch == '&')
      out += "\\u0026";
    else if (ch == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
             (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else
      out += ch;
  }
  return out;
}

}  // namespace ordo::cli
