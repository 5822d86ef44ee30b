// Decodes a PNG with libpng, for tests that check the pictures ordo writes.
#pragma once

#include <png.h>

#include <array>
#include <cstdio>
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

}  // namespace ordo::test
