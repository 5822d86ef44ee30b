// ordo command line: JSON numbers as short as the float they stand for.
#pragma once

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

namespace ordo::cli {

// The shortest decimal that reads back as the same float (so 0.1f prints as 0.1, not as the
// double 0.10000000149011612).
inline double short_float(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, f);
  *end = '\0';
  return ec == std::errc() ? std::strtod(buf, nullptr) : double(f);
}

inline nlohmann::json json_floats(const float* v, size_t n) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) a.push_back(short_float(v[i]));
  return a;
}

}  // namespace ordo::cli
