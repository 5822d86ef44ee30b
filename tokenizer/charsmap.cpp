#include "tokenizer/charsmap.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ordo/errors.h>

namespace ordo {

namespace {

// Protobuf wire format (https://protobuf.dev/programming-guides/encoding/): each field is a
// varint key (number << 3 | wire type) then a varint, 8 bytes, 4 bytes, or a varint length and
// that many bytes. Groups (types 3, 4) never occur in sentencepiece models and are refused.
struct Field {
  uint64_t number = 0;
  int type = 0;
  std::string_view bytes;  // the payload of a length-delimited field
};

bool read_varint(std::string_view s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= s.size()) return false;
    const unsigned char c = static_cast<unsigned char>(s[i++]);
    v |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) return true;
  }
  return false;
}

// Splits a message into fields; false (with the failing offset in `at`) if the framing is broken.
bool fields(std::string_view s, std::vector<Field>& out, size_t& at) {
  size_t i = 0;
  while (i < s.size()) {
    at = i;
    Field f;
    uint64_t key, v;
    if (!read_varint(s, i, key)) return false;
    f.number = key >> 3;
    f.type = int(key & 7);
    switch (f.type) {
      case 0:
        if (!read_varint(s, i, v)) return false;
        break;
      case 1:
      case 5: {
        const size_t n = f.type == 1 ? 8 : 4;
        if (s.size() - i < n) return false;
        i += n;
        break;
      }
      case 2:
        if (!read_varint(s, i, v) || v > s.size() - i) return false;
        f.bytes = s.substr(i, size_t(v));
        i += size_t(v);
        break;
      default:
        return false;
    }
    out.push_back(f);
  }
  return true;
}

uint32_t unit_at(std::string_view trie, size_t k) {
  uint32_t u;
  std::memcpy(&u, trie.data() + 4 * k, 4);  // little-endian, as sentencepiece writes it
  return u;
}

// darts-clone's unit layout (darts.h, DoubleArrayUnit).
bool has_leaf(uint32_t u) {
  return (u >> 8) & 1;
}
uint32_t value(uint32_t u) {
  return u & ((1u << 31) - 1);
}
uint32_t label(uint32_t u) {
  return u & ((1u << 31) | 0xff);
}
uint32_t offset(uint32_t u) {
  return (u >> 10) << ((u & (1u << 9)) >> 6);
}

}  // namespace

std::string check_charsmap(std::string_view blob) {
  if (blob.size() < 4) return "charsmap of " + std::to_string(blob.size()) + " bytes has no trie size";
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes > blob.size() - 4)
    return "charsmap trie of " + std::to_string(trie_bytes) + " bytes runs past its " + std::to_string(blob.size()) +
           "-byte blob";
  const std::string_view trie = blob.substr(4, trie_bytes);
  const std::string_view strings = blob.substr(4 + size_t(trie_bytes));
  const size_t n = trie.size() / 4;  // units
  if (n == 0) return "charsmap trie is empty";
  if (strings.empty() || strings.back() != '\0') return "charsmap replacement strings are not NUL-terminated";

  // Follow the trie as commonPrefixSearch does: from a node base p, byte c reads unit p ^ c; if
  // its label is c the walk goes on from base (p ^ c) ^ offset, and a leaf flag reads the value
  // unit there: an offset into `strings`. Every base must keep all 256 children in the array.
  std::vector<uint8_t> seen(n, 0);
  std::vector<size_t> todo = {offset(unit_at(trie, 0))};
  while (!todo.empty()) {
    const size_t p = todo.back();
    todo.pop_back();
    if ((p | 0xff) >= n)
      return "charsmap trie node " + std::to_string(p) + " has children past its " + std::to_string(n) + " units";
    if (seen[p]) continue;
    seen[p] = 1;
    for (uint32_t c = 0; c < 256; ++c) {
      const uint32_t u = unit_at(trie, p ^ c);
      if (label(u) != c) continue;
      const size_t next = (p ^ c) ^ offset(u);
      if (next >= n) return "charsmap trie unit " + std::to_string(p ^ c) + " points past the trie";
      if (has_leaf(u) && value(unit_at(trie, next)) >= strings.size())
        return "charsmap trie unit " + std::to_string(next) + " points past the replacement strings";
      todo.push_back(next);
    }
  }
  return "";
}

std::string_view normalizer_charsmap(std::string_view proto) {
  std::vector<Field> top, spec;
  size_t at = 0;
  if (!fields(proto, top, at)) return {};
  for (const Field& f : top) {
    if (f.number != 3 || f.type != 2) continue;  // ModelProto.normalizer_spec
    spec.clear();
    if (!fields(f.bytes, spec, at)) return {};
    std::string_view blob;
    for (const Field& g : spec)
      if (g.number == 2 && g.type == 2) blob = g.bytes;  // precompiled_charsmap (a later one wins, as in protobuf)
    return blob;
  }
  return {};
}

uint64_t normalized_bytes_bound(std::string_view blob, std::string_view text, uint64_t stop, size_t* prefix) {
  std::string_view trie, strings;
  if (blob.size() >= 4) {
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, blob.data(), 4);
    trie = blob.substr(4, trie_bytes);
    strings = blob.substr(4 + size_t(trie_bytes));
  }
  const size_t units = trie.size() / 4;
  auto spaced = [](std::string_view s) {  // bytes, each space counted as the 3 of "▁"
    return uint64_t(s.size()) + 2 * uint64_t(std::count(s.begin(), s.end(), ' '));
  };
  uint64_t bound = 3;  // the "▁" in front
  size_t i = 0;
  while (i < text.size()) {
    // The longest match from i, as darts-clone's commonPrefixSearch finds them (check_charsmap).
    size_t match = 0;
    std::string_view replacement;
    if (units > 0) {
      size_t p = offset(unit_at(trie, 0));
      for (size_t j = i; j < text.size(); ++j) {
        const uint32_t c = static_cast<unsigned char>(text[j]);
        if ((p ^ c) >= units) break;
        const uint32_t u = unit_at(trie, p ^ c);
        if (label(u) != c) break;
        p = (p ^ c) ^ offset(u);
        if (p >= units) break;
        if (has_leaf(u)) {
          const size_t v = value(unit_at(trie, p));
          if (v >= strings.size()) break;
          match = j - i + 1;
          replacement = strings.substr(v);
          replacement = replacement.substr(0, replacement.find('\0'));
        }
      }
    }
    size_t step = match;
    if (step == 0) {  // one character, kept
      const unsigned char c = static_cast<unsigned char>(text[i]);
      step = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
      step = std::min(step, text.size() - i);
    }
    const uint64_t more = std::max(spaced(text.substr(i, step)), match ? spaced(replacement) : 0);
    if (bound + more > stop) {
      if (prefix) *prefix = i;
      return bound + more;
    }
    bound += more;
    i += step;
  }
  if (prefix) *prefix = i;
  return bound;
}

size_t max_piece_bytes() {
  constexpr uint64_t kMaxCounted = uint64_t(64) << 20;
  struct rlimit r {};
  uint64_t stack = uint64_t(8) << 20;
  if (::getrlimit(RLIMIT_STACK, &r) == 0)
    stack = r.rlim_cur == RLIM_INFINITY ? kMaxCounted : std::min<uint64_t>(r.rlim_cur, kMaxCounted);
  return size_t(std::max<uint64_t>(stack / 256, 512));
}

void require_sentencepiece_model(const std::string& bytes, const std::string& path) {
  if (bytes.rfind("version https://git-lfs", 0) == 0)
    throw InputError(path, "is a Git LFS pointer file, not the tokenizer (fetch it with `git lfs pull`)");
  if (bytes.empty()) throw InputError(path, "is empty, not a sentencepiece model");
  if (const std::string problem = check_sentencepiece_model(bytes); !problem.empty())
    throw InputError(path, "not a sentencepiece model (" + problem + ")");
}

std::string check_sentencepiece_model(std::string_view proto) {
  std::vector<Field> top;
  size_t at = 0;
  if (!fields(proto, top, at)) return "broken protobuf framing at byte " + std::to_string(at);
  size_t piece_index = 0;
  for (const Field& f : top) {
    if (f.number == 1) {  // ModelProto.pieces: SentencePiece {piece = 1, score = 2, type = 3}
      if (f.type != 2) return "piece " + std::to_string(piece_index) + " is not a message";
      std::vector<Field> piece;
      size_t inner = 0;
      if (!fields(f.bytes, piece, inner))
        return "broken protobuf framing in piece " + std::to_string(piece_index) + " at byte " +
               std::to_string(size_t(f.bytes.data() - proto.data()) + inner);
      // sentencepiece builds its trie of pieces with darts-clone, which aborts the process (an
      // exception it cannot pass on) on an empty key or a NUL byte inside one.
      std::string_view text;
      for (const Field& g : piece)
        if (g.number == 1) text = g.bytes;
      const std::string which = "piece " + std::to_string(piece_index);
      if (text.empty()) return which + " is empty";
      if (text.find('\0') != std::string_view::npos) return which + " holds a NUL byte";
      if (text.size() > max_piece_bytes())
        return which + " is " + std::to_string(text.size()) + " bytes long, more than the " +
               std::to_string(max_piece_bytes()) +
               " this process's stack allows (sentencepiece builds its trie of pieces by recursion, one level per "
               "byte; ulimit -s raises it)";
      ++piece_index;
      continue;
    }
    if (f.number != 3 && f.number != 5) continue;  // ModelProto.normalizer_spec, .denormalizer_spec
    if (f.type != 2) return "normalizer spec is not a message";
    std::vector<Field> spec;
    size_t inner = 0;
    if (!fields(f.bytes, spec, inner))
      return "broken protobuf framing in the normalizer spec at byte " +
             std::to_string(size_t(f.bytes.data() - proto.data()) + inner);
    for (const Field& g : spec)
      if (g.number == 2 && g.type == 2 && !g.bytes.empty())  // NormalizerSpec.precompiled_charsmap
        if (std::string error = check_charsmap(g.bytes); !error.empty()) return error;
  }
  return "";
}

}  // namespace ordo
