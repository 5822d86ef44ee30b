// ordo: the two kinds of failure the engine reports.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ordo {

// Something wrong with what the user gave: a file, a config value, a text, an id.
// The message reads "<where>: <what is wrong>"; the command line prints "error: " before it
// and exits with status 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& what) : std::runtime_error(where + ": " + what) {}
};

// Every size computed from file contents (header lengths, shape products, byte counts,
// offsets) goes through these two: an overflow is an InputError, never a silent wrap.
inline uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& where, const std::string& what) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) throw InputError(where, what + " overflows 64 bits");
  return out;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, const std::string& where, const std::string& what) {
  uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) throw InputError(where, what + " overflows 64 bits");
  return out;
}

}  // namespace ordo
