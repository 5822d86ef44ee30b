// What the tokenizers share (tokenizer.cpp through sentencepiece, tokenizer_unigram.cpp through
// unigram.cpp for the WebAssembly build): "<mask>" markers in a text, the special tokens' list, and the
// UTF-8 check.
#include <algorithm>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

namespace ordo {

Tokenization Tokenizer::encode_masked(std::string_view text, const std::string& where,
                                      std::vector<int>* positions) const {
  const std::string_view kMarker = mask_marker();
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
  const int mask = text.find(kMarker) == std::string_view::npos ? -1 : mask_id();
  if (positions) positions->clear();
  if (text.find(kMarker) != std::string_view::npos && mask < 0)
    throw InputError(path_, "has no " + std::string(kMarker) +
                                " piece, so it cannot mark the pieces to fill (a masked language model's "
                                "tokenizer has it as a control symbol)");
  if (bpe_) {  // <mask> is one of its special tokens (lstrip): the text as encode() reads it, as RobertaTokenizerFast
    Tokenization out = encode(text, where);
    for (size_t i = 0; positions && i < out.ids.size(); ++i)
      if (out.ids[i] == mask) positions->push_back(int(i));
    return out;
  }
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  Tokenization out;
  size_t start = 0;
  bool after_marker = false;
  for (;;) {
    const size_t end = std::min(text.find(kMarker, start), text.size());
    std::string_view segment = text.substr(start, end - start);
    const bool joined = after_marker && !segment.empty() && !is_space(segment.front());
    while (!segment.empty() && is_space(segment.front())) segment.remove_prefix(1);
    while (!segment.empty() && is_space(segment.back())) segment.remove_suffix(1);
    if (!segment.empty()) {
      sentencepiece::SentencePieceProcessor* inside = joined ? inside_word() : nullptr;
      Tokenization part = inside ? encode_with(*inside, segment, where, nullptr) : encode(segment, where);
      size_t first = 0;
      if (joined && !part.pieces.empty() && part.pieces[0] == "\xE2\x96\x81") first = 1;  // a lone "▁"
      out.pieces.insert(out.pieces.end(), part.pieces.begin() + first, part.pieces.end());
      out.ids.insert(out.ids.end(), part.ids.begin() + first, part.ids.end());
    }
    if (end == text.size()) break;
    if (positions) positions->push_back(int(out.ids.size()));
    out.ids.push_back(mask);
    out.pieces.push_back(std::string(kMarker));
    start = end + kMarker.size();
    after_marker = true;
  }
  return out;
}
void Tokenizer::keep_special_tokens_below(int limit) {
  specials_.erase(
      std::remove_if(specials_.begin(), specials_.end(), [limit](const SpecialToken& s) { return s.id >= limit; }),
      specials_.end());
}

bool valid_utf8(std::string_view s, size_t* bad_offset) {
  size_t i = 0;
  const size_t n = s.size();
  auto fail = [&]() {
    if (bad_offset) *bad_offset = i;
    return false;
  };
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07;
    } else {
      return fail();
    }
    if (i + len > n) return fail();
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return fail();
      cp = (cp << 6) | (cc & 0x3f);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return fail();
    i += len;
  }
  return true;
}

}  // namespace ordo
