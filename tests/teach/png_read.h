// Decodes a PNG with libpng, for tests that check the pictures ordo writes.
#pragma once

#include <png.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ordo::test {

struct Decoded {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;  // (height, width, 3)
  std::array<int, 3> at(int x, int y) const {
    const unsigned char* p = &rgb[(size_t(y) * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

// Reads an 8-bit RGB PNG; returns width 0 when the file is missing or not such a PNG.
inline Decoded read_png(const std::string& path) {
  Decoded out;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) return out;
  image.format = PNG_FORMAT_RGB;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    png_image_free(&image);
    return {};
  }
  out.width = int(image.width), out.height = int(image.height);
  return out;
}

// The uncompressed text chunks of a PNG (tEXt, and iTXt without compression): keyword -> text.
inline std::map<std::string, std::string> read_png_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> out;
  auto u32 = [&](size_t at) {
    return uint32_t(uint8_t(b[at])) << 24 | uint32_t(uint8_t(b[at + 1])) << 16 | uint32_t(uint8_t(b[at + 2])) << 8 |
           uint8_t(b[at + 3]);
  };
  for (size_t at = 8; at + 12 <= b.size();) {
    const uint32_t n = u32(at);
    if (at + 12 + n > b.size()) break;
    const std::string type = b.substr(at + 4, 4), data = b.substr(at + 8, n);
    const size_t nul = data.find('\0');
    if (type == "tEXt" && nul != std::string::npos) out[data.substr(0, nul)] = data.substr(nul + 1);
    if (type == "iTXt" && nul != std::string::npos && nul + 2 < data.size() && data[nul + 1] == 0) {
      // keyword NUL flag method language NUL translated-keyword NUL text
      const size_t lang_end = data.find('\0', nul + 3);
      const size_t key_end = lang_end == std::string::npos ? lang_end : data.find('\0', lang_end + 1);
      if (key_end != std::string::npos) out[data.substr(0, nul)] = data.substr(key_end + 1);
    }
    at += 12 + n;
  }
  return out;
}

// Whitespace-separated numbers of a text chunk ("12 30 640 480").
inline std::vector<double> numbers_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<double> out;
  for (double v; in >> v;) out.push_back(v);
  return out;
}

}  // namespace ordo::test
