// Helpers shared by the picture tests.
#pragma once

#include <sys/stat.h>

#include <array>
#include <string>

#include "tools/teach/figure.h"

namespace ordo::test {

// A colour as three comparable numbers.
using Colour = std::array<int, 3>;
inline Colour rgb(teach::Rgb c) {
  return {c.r, c.g, c.b};
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace ordo::test
