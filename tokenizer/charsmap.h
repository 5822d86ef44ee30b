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

// The longest piece a model may hold, in bytes. sentencepiece builds a trie of its pieces by
// recursion, one level per byte (a piece of ~100 KB overflows the stack), and matching a text
// costs up to (text length × longest piece); learned pieces are at most 16 characters by default,
// and special symbols are a few bytes.
constexpr size_t kMaxPieceBytes = 512;

// Checks the protobuf framing of a serialized ModelProto, the length of every piece, and every
// precompiled_charsmap in its normalizer and denormalizer specs. Returns "" if sound, else what is
// wrong (with a byte offset or the piece's index).
std::string check_sentencepiece_model(std::string_view proto);

// Checks one precompiled_charsmap blob: [u32 trie bytes][trie units][NUL-terminated strings].
std::string check_charsmap(std::string_view blob);

}  // namespace ordo
