#include "tokenizer/unigram.h"

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <ordo/errors.h>

namespace ordo {

namespace {

// Protobuf's wire format: a varint key (field number << 3 | wire type), then a varint (type 0),
// 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5). The model has passed
// check_sentencepiece_model, so the framing is sound; a broken one still only ends the walk.
bool varint(std::string_view s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && i < s.size(); shift += 7) {
    const unsigned char c = static_cast<unsigned char>(s[i++]);
    v |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) return true;
  }
  return false;
}

// Calls f(number, type, value, bytes) for each field of message `s`; value is a varint's value or
// a fixed field's bits, bytes a length-delimited field's payload.
template <typename F>
void each_field(std::string_view s, F f) {
  size_t i = 0;
  while (i < s.size()) {
    uint64_t key = 0, v = 0;
    if (!varint(s, i, key)) return;
    const int type = int(key & 7);
    std::string_view bytes;
    if (type == 0) {
      if (!varint(s, i, v)) return;
    } else if (type == 1 || type == 5) {
      const size_t n = type == 1 ? 8 : 4;
      if (s.size() - i < n) return;
      for (size_t k = 0; k < n; ++k) v |= uint64_t(static_cast<unsigned char>(s[i + k])) << (8 * k);
      i += n;
    } else if (type == 2) {
      if (!varint(s, i, v) || v > s.size() - i) return;
      bytes = s.substr(i, size_t(v));
      i += size_t(v);
    } else {
      return;
    }
    f(key >> 3, type, v, bytes);
  }
}

float as_float(uint64_t bits) {
  const uint32_t b = uint32_t(bits);
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

uint32_t unit_at(const std::string& trie, size_t i) {
  if (4 * i + 4 > trie.size()) return 0;  // outside: a unit whose label matches no byte
  const auto* p = reinterpret_cast<const unsigned char*>(trie.data()) + 4 * i;
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// One UTF-8 character's length from its first byte, as sentencepiece's OneCharLen (no validation).
size_t char_length(unsigned char c) {
  return "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4];
}

// The length of the valid UTF-8 character at the start of s, or 0.
size_t valid_char(std::string_view s) {
  const size_t n = char_length(static_cast<unsigned char>(s[0]));
  if (n > s.size() || (n == 1 && static_cast<unsigned char>(s[0]) >= 0x80)) return 0;
  size_t bad = 0;
  return valid_utf8(s.substr(0, n), &bad) ? n : 0;
}

constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁, the escaped space

}  // namespace

Unigram Unigram::parse(std::string_view proto, const std::string& path) {
  Unigram u;
  int model_type = 1;  // UNIGRAM
  bool suffix = false;
  std::string charsmap;
  each_field(proto, [&](uint64_t number, int type, uint64_t, std::string_view bytes) {
    if (number == 1 && type == 2) {  // pieces { piece = 1, score = 2, type = 3 }
      Piece p;
      each_field(bytes, [&](uint64_t n, int t, uint64_t v, std::string_view b) {
        if (n == 1 && t == 2) p.text = std::string(b);
        if (n == 2 && t == 5) p.score = as_float(v);
        if (n == 3 && t == 0) p.type = int(v);
      });
      u.pieces_.push_back(std::move(p));
    } else if (number == 2 && type == 2) {  // trainer_spec
      each_field(bytes, [&](uint64_t n, int t, uint64_t v, std::string_view b) {
        if (n == 3 && t == 0) model_type = int(v);
        if (n == 24 && t == 0) suffix = v != 0;
        if (n == 35 && t == 0) u.byte_fallback_ = v != 0;
        if (n == 45 && t == 2) u.unk_piece_ = std::string(b);
        if (n == 46 && t == 2) u.bos_piece_ = std::string(b);
        if (n == 47 && t == 2) u.eos_piece_ = std::string(b);
      });
    } else if (number == 3 && type == 2) {  // normalizer_spec; a second occurrence merges into the first
      each_field(bytes, [&](uint64_t n, int t, uint64_t v, std::string_view b) {
        if (n == 2 && t == 2) charsmap = std::string(b);
        if (n == 3 && t == 0) u.add_dummy_prefix_ = v != 0;
        if (n == 4 && t == 0) u.remove_extra_whitespaces_ = v != 0;
        if (n == 5 && t == 0) u.escape_whitespaces_ = v != 0;
      });
    }
  });
  if (model_type != 1)
    throw InputError(path, "is not a unigram sentencepiece model, the only kind the browser's tokenizer reads");
  if (suffix)
    throw InputError(
        path, "puts whitespace after words (treat_whitespace_as_suffix), which the browser's tokenizer does not read");
  if (u.pieces_.empty()) throw InputError(path, "sentencepiece model has no pieces");
  u.min_score_ = FLT_MAX;
  u.max_score_ = FLT_MIN;  // as sentencepiece starts them
  for (size_t i = 0; i < u.pieces_.size(); ++i) {
    const Piece& p = u.pieces_[i];
    const bool lattice = p.type == kNormal || p.type == kUserDefined || p.type == kUnused;
    (lattice ? u.normal_ : u.reserved_).emplace(p.text, int(i));
    if (p.type == kUnknown && u.unk_ < 0) u.unk_ = int(i);
    if (p.type == kUserDefined) u.user_defined_.push_back(p.text);
    if (p.type == kNormal)
      u.min_score_ = std::min(u.min_score_, p.score), u.max_score_ = std::max(u.max_score_, p.score);
    if (lattice) u.longest_piece_ = std::max(u.longest_piece_, p.text.size());
  }
  if (u.unk_ < 0) throw InputError(path, "sentencepiece model has no unknown piece (<unk>)");
  // The charsmap: [u32 size of the trie][the trie][the replacements].
  if (charsmap.size() > 4) {
    const auto* p = reinterpret_cast<const unsigned char*>(charsmap.data());
    const size_t n = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    if (n < charsmap.size() - 4) {
      u.trie_ = charsmap.substr(4, n);
      u.strings_ = charsmap.substr(4 + n);
    }
  }
  return u;
}

int Unigram::id(const std::string& piece) const {
  if (auto it = reserved_.find(piece); it != reserved_.end()) return it->second;
  if (auto it = normal_.find(piece); it != normal_.end()) return it->second;
  return unk_;
}

// The darts-clone double array: unit u has a leaf when bit 8 is set, its label is bits 0-7 (bit 31
// set for a value unit), its children's base is offset(u) away, and a value unit holds bits 0-30.
size_t Unigram::longest_rule(std::string_view s, std::string_view& replacement) const {
  if (trie_.empty()) return 0;
  auto offset = [](uint32_t u) { return size_t((u >> 10) << ((u & (1u << 9)) >> 6)); };
  size_t node = offset(unit_at(trie_, 0)), longest = 0, value = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    node ^= c;
    const uint32_t u = unit_at(trie_, node);
    if ((u & ((1u << 31) | 0xFF)) != c) break;
    node ^= offset(u);
    if ((u >> 8) & 1) longest = i + 1, value = unit_at(trie_, node) & ((1u << 31) - 1);
  }
  if (longest == 0 || value >= strings_.size()) return 0;
  const char* start = strings_.data() + value;
  replacement = std::string_view(start, strnlen(start, strings_.size() - value));
  return longest;
}

// sentencepiece's Normalizer::Normalize: each step takes the longest user-defined piece, else the
// charsmap's longest rule, else one character, from the start of what is left. Spaces at the
// start are dropped, runs of spaces become one, spaces at the end are dropped (remove_extra_
// whitespaces), each space is written "▁" (escape_whitespaces), and "▁" goes first (the dummy
// prefix). to_orig[i]: the byte of `text` that normalized byte i came from; one more at the end.
void Unigram::normalize(std::string_view text, bool dummy_prefix, std::string& out,
                        std::vector<size_t>& to_orig) const {
  out.clear();
  to_orig.clear();
  size_t consumed = 0;
  auto prefix = [&](std::string_view s) -> std::pair<std::string_view, size_t> {
    size_t user = 0;
    for (const std::string& p : user_defined_)
      if (p.size() > user && s.substr(0, p.size()) == p) user = p.size();
    if (user) return {s.substr(0, user), user};
    std::string_view replacement;
    if (const size_t n = longest_rule(s, replacement)) return {replacement, n};
    if (const size_t n = valid_char(s)) return {s.substr(0, n), n};
    return {"\xEF\xBF\xBD", 1};  // U+FFFD for a byte that starts no character (ordo refuses such text first)
  };
  if (remove_extra_whitespaces_) {
    while (!text.empty()) {
      const auto p = prefix(text);
      if (p.first != " ") break;
      text.remove_prefix(p.second);
      consumed += p.second;
    }
  }
  if (text.empty()) {
    to_orig.push_back(consumed);
    return;
  }
  auto append = [&](std::string_view bytes) {
    out.append(bytes);
    to_orig.insert(to_orig.end(), bytes.size(), consumed);
  };
  if (dummy_prefix) append(escape_whitespaces_ ? kSpace : " ");
  bool prev_space = remove_extra_whitespaces_;
  while (!text.empty()) {
    auto [sp, n] = prefix(text);
    while (prev_space && !sp.empty() && sp.front() == ' ') sp.remove_prefix(1);
    if (!sp.empty()) {
      for (char c : sp) append(escape_whitespaces_ && c == ' ' ? kSpace : std::string_view(&c, 1));
      prev_space = sp.back() == ' ';
    }
    consumed += n;
    text.remove_prefix(n);
    if (!remove_extra_whitespaces_) prev_space = false;
  }
  if (remove_extra_whitespaces_) {
    const std::string_view space = escape_whitespaces_ ? kSpace : " ";
    while (out.size() >= space.size() && std::string_view(out).substr(out.size() - space.size()) == space) {
      const size_t length = out.size() - space.size();
      consumed = to_orig[length];
      out.resize(length);
      to_orig.resize(length);
    }
  }
  to_orig.push_back(consumed);
}

// The best segmentation of the normalized text: best[e] is the highest total score of pieces that
// cover bytes [0, e), and the last piece of that cover. A piece's score is the model's (a user-
// defined piece: its length times the highest score, less 0.1, so it always wins); a character no
// piece starts with is the unknown piece, scored 10 below the lowest. Ties keep the first found,
// as sentencepiece's EncodeOptimized.
Tokenization Unigram::encode(std::string_view text, bool dummy_prefix, std::vector<Span>* spans) const {
  std::string norm;
  std::vector<size_t> to_orig;
  normalize(text, dummy_prefix, norm, to_orig);
  struct Best {
    int id = -1;
    float score = 0;
    long start = -1;
  };
  const size_t n = norm.size();
  std::vector<Best> best(n + 1);
  const float unk_score = min_score_ - 10.0f;
  for (size_t start = 0; start < n;) {
    const float here = best[start].score;
    const size_t mblen = std::min(char_length(static_cast<unsigned char>(norm[start])), n - start);
    bool single = false;
    std::string key;
    for (size_t end = start + 1; end <= n && end - start <= longest_piece_; ++end) {
      key.assign(norm, start, end - start);
      const auto it = normal_.find(key);
      if (it == normal_.end()) continue;
      const Piece& p = pieces_[size_t(it->second)];
      if (p.type == kUnused) continue;
      const size_t length = end - start;
      const double score = p.type == kUserDefined ? double(length) * max_score_ - 0.1 : double(p.score);
      const float candidate = float(score + here);
      Best& b = best[end];
      if (b.start == -1 || candidate > b.score) b = {it->second, candidate, long(start)};
      if (length == mblen) single = true;
    }
    if (!single) {
      Best& b = best[start + mblen];
      const float candidate = unk_score + here;
      if (b.start == -1 || candidate > b.score) b = {unk_, candidate, long(start)};
    }
    start += mblen;
  }
  std::vector<std::pair<size_t, int>> path;  // (start, id), backwards
  for (size_t end = n; end > 0;) {
    const Best& b = best[end];
    path.emplace_back(size_t(b.start), b.id);
    end = size_t(b.start);
  }
  std::reverse(path.begin(), path.end());

  Tokenization out;
  if (spans) spans->clear();
  bool prev_unknown = false;
  for (size_t k = 0; k < path.size(); ++k) {
    const size_t begin = path[k].first, end = k + 1 < path.size() ? path[k + 1].first : n;
    const int id = path[k].second;
    const std::string_view w = std::string_view(norm).substr(begin, end - begin);
    const size_t ob = to_orig[begin], oe = to_orig[end];
    const bool unknown = id == unk_;
    if (unknown && byte_fallback_) {
      for (size_t i = 0; i < w.size(); ++i) {  // the last byte piece owns the character
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(w[i]));
        out.pieces.push_back(name);
        out.ids.push_back(this->id(name));
        if (spans) spans->push_back({ob, i + 1 == w.size() ? oe : ob});
      }
    } else if (unknown && prev_unknown) {  // a run of unknown characters is one piece
      out.pieces.back() += std::string(w);
      if (spans) spans->back().end = oe;
    } else {
      out.pieces.push_back(unknown ? std::string(w) : pieces_[size_t(id)].text);
      out.ids.push_back(id);
      if (spans) spans->push_back({ob, oe});
    }
    prev_unknown = unknown;
  }
  return out;
}

}  // namespace ordo
