// ordo: checks a sentencepiece model's normalization tables before sentencepiece reads them.
//
// A model's NormalizerSpec may carry a precompiled_charsmap: a darts-clone double-array trie that
// maps input bytes to offsets into a table of NUL-terminated replacement strings. sentencepiece
// follows that trie and those offsets without bounds checks, so a corrupted or hostile file makes
// it read outside the buffer. This walks every path the normalizer can take and proves each read
// stays inside.
#pragma once

#include <cstddef>
#include <cstdint>
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
// What every reader of a model file checks before parsing it (the sentencepiece library trusts its
// normalization tables, ordo's own reader too): InputError(path) for a Git LFS pointer, an empty
// file, or a model check_sentencepiece_model finds unsound.
void require_sentencepiece_model(const std::string& bytes, const std::string& path);

// Checks one precompiled_charsmap blob: [u32 trie bytes][trie units][NUL-terminated strings].
std::string check_charsmap(std::string_view blob);

// The precompiled_charsmap of a (checked) model's normalizer spec, or "" when it has none.
std::string_view normalizer_charsmap(std::string_view proto);

// How many bytes sentencepiece's normalizer can make of `text` (valid UTF-8), at most, with the
// (checked) charsmap `blob` ("": none), found without making them. The normalizer replaces the
// longest match of the charsmap's trie at each place by its string and keeps any other character
// (NFKC makes 33 bytes of the 3 of U+FDFA); then each space becomes "▁" (3 bytes) and one "▁" goes
// in front. So the bound is 3 + Σ over the matches and characters of max(what it becomes, what it
// was), a space counted 3. The walk stops once the bound passes `stop`: *prefix then receives the
// bytes of `text` whose bound is at most `stop` (whole matches and characters), and the value
// returned is the first partial sum past `stop` (the whole text's bound when it never passes it).
uint64_t normalized_bytes_bound(std::string_view blob, std::string_view text, uint64_t stop = UINT64_MAX,
                                size_t* prefix = nullptr);

}  // namespace ordo
