// ordo: one code point of UTF-8 read and one written, for the tokenizers' loops over characters
// (internal to tokenizer/; the text is checked with valid_utf8 before it gets here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ordo {

// Decodes the code point of valid UTF-8 at s[i], moving i past it.
inline uint32_t next_cp(std::string_view s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  i += size_t(len);
  return cp;
}

// Appends the UTF-8 of code point cp (one to four bytes) to out.
inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6)), out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
  }
}

}  // namespace ordo
