// ordo: the loop of the AVX-512 dot-product kernels' tiles (int8_vnni_avx512.cpp on vpdpbusd and
// vpdpwssd, bf16_avx512.cpp on vdpbf16ps), written once and compiled in each of those files with its
// flags (in an unnamed namespace: each file keeps its own copy, and the linker never picks one
// file's for another's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/tiles.h"

namespace ordo::avx512 {

namespace {

// How far ahead of each step dot_sums asks for a panel's line, in bytes (16 steps); 256, 512 and 2,048
// measured much the same (docs/performance.md, "The tiles' loads").
constexpr size_t kPanelAhead = 1024;

// The sums of an MR × (16·NR) tile: MR rows of x against NR panels of W, MR·NR vectors of 16 sums
// kept in registers along K. Each step loads NR panels' 64 bytes once and broadcasts 4 bytes of
// each row of x to all 16 lanes (vpbroadcastd), and dot(acc, x, w) is the instruction: 4 k of u8
// against s8, or 2 k of int16 or bf16 pairs. The sums are int32, or float held as __m512i (their
// bits as they are: the casts cost no instruction). x's rows are row_bytes apart, W's panels
// panel_bytes.
//
// The sums leave the registers through a tile of memory (L1), sums[i][16·j + c] for row i, panel j,
// column c: taken off and scaled straight from the registers, the epilogue's operands made GCC 12
// move a few accumulators to the stack and back at every step of the loop.
template <int MR, int NR, class T, class Dot>
inline void dot_sums(T (*sums)[NR * 16], const uint8_t* x, size_t row_bytes, const uint8_t* w, size_t panel_bytes,
                     Dot dot) {
  __m512i acc[MR][NR];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_si512();
  for (size_t k = 0; k < row_bytes; k += 4) {  // byte k of each row, byte 16·k of each panel
    __m512i wv[NR];
    ORDO_UNROLL for (int j = 0; j < NR; ++j) {
      wv[j] = _mm512_loadu_si512(w + j * panel_bytes + k * 16);
      // each step takes a new line of every panel: the line 16 steps on asked for now (a prefetch
      // past the panel's end is harmless, it never faults)
      _mm_prefetch(reinterpret_cast<const char*>(w + j * panel_bytes + k * 16 + kPanelAhead), _MM_HINT_T0);
    }
    ORDO_UNROLL for (int i = 0; i < MR; ++i) {
      int32_t four;
      std::memcpy(&four, x + i * row_bytes + k, 4);
      const __m512i xv = _mm512_set1_epi32(four);
      ORDO_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = dot(acc[i][j], xv, wv[j]);
    }
  }
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < NR; ++j)
      _mm512_store_si512(sums[i] + 16 * j, acc[i][j]);
}

// The tile's lines of the output (rows ld elements apart from `first`, 16·NR elements each) asked
// for, for writing, before the tile's k loop: the output of a wide product (linear1's 1,536 columns)
// is not in cache, and the tile's stores would otherwise wait for them all at its end.
template <int MR, int NR, class T>
inline void prefetch_output(T* first, size_t ld) {
  static_assert(sizeof(T) == 4, "16 elements are a line");
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < NR; ++j)
      __builtin_prefetch(first + i * ld + 16 * j, 1, 3);
}

}  // namespace

}  // namespace ordo::avx512
