// ordo: checks a sentencepiece model's normalization tables before sentencepiece reads them.
//
// A model's NormalizerSpec may carry a precompiled_charsmap: a darts-clone double-array trie that
// maps input bytes to offsets into a table of NUL-terminated replacement strings. sentencepiece
// follows that trie and those offsets without bounds checks, so a corrupted or hostile file makes
// it read outside the buffer. This walks every path the normalizer can take and proves each read
// stays inside.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ordo {

// The longest piece a model may hold, in bytes: what the stack allows. sentencepiece builds the
// trie of its pieces by recursion, one level per byte, and a level took up to 128 bytes of stack
// (measured: a 16 KB piece overflowed a 1 MiB stack, a 128 KB one the usual 8 MiB). So a piece may
// have the stack limit (ulimit -s, at most 64 MiB counted) / 256 bytes, half of what would fit:
// 32,768 with 8 MiB. Learned pieces are at most 16 characters by default and user-defined
// symbols rarely more than a few hundred bytes.
size_t max_piece_bytes();

// Checks the protobuf framing of a serialized ModelProto, the length of every piece, and every
// precompiled_charsmap in its normalizer and denormalizer specs. Returns "" if sound, else what is
// wrong (with a byte offset or the piece's index).
std::string check_sentencepiece_model(std::string_view proto);

// Checks one precompiled_charsmap blob: [u32 trie bytes][trie units][NUL-terminated strings].
std::string check_charsmap(std::string_view blob);

}  // namespace ordo
