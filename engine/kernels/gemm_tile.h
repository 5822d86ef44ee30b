// ordo: the packed GEMM's micro-kernel (gemm_avx512.cpp, gemm_avx2.cpp), written once against simd.h's
// Vec and compiled in each of those files at its width: 12 × 32 in AVX-512's zmm, 6 × 16 in AVX2's
// ymm, two vectors of B̂ a row. How the tile is stored is each file's own (masks at AVX-512).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

#include "engine/kernels/simd.h"

namespace ordo {
namespace ORDO_SIMD_NS {

// C (mr, nr) = α · A (mr, kc) · Bp (kc, NR) + (first ? bias : C), for mr ≤ MR, nr ≤ NR = 2·kLanes.
// The sums c0[i], c1[i] (the two halves of row i) are kept in registers along kc: each step loads 2
// vectors of Bp and broadcasts one value of each row of A (read where it is, row stride lda) for
// 2·MR FMAs. Rows past mr read the last one again; their results are not stored. Then
// store(C, ldc, c0, c1, mr, nr, alpha, bias, first) writes the tile.
template <int MR, auto store>
void micro_kernel(float* C, int ldc, const float* A, int lda, const float* Bp, int kc, int mr, int nr, float alpha,
                  const float* bias, bool first) {
  Vec c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = vzero();
  const float* ai[MR];
  for (int i = 0; i < MR; ++i) ai[i] = A + size_t(std::min(i, mr - 1)) * lda;
  for (int k = 0; k < kc; ++k, Bp += 2 * kLanes) {
    const Vec b0 = vload(Bp), b1 = vload(Bp + kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const Vec a = vset(ai[i][k]);
      c0[i] = vfma(a, b0, c0[i]);
      c1[i] = vfma(a, b1, c1[i]);
    }
  }
  store(C, ldc, c0, c1, mr, nr, alpha, bias, first);
}

// The prepacked kernel's tile (linear_prepacked, gemm.h): acc (mr, NR) += x (mr, kc) · Ŵ (kc, NR), where
// Ŵ is kc steps of one panel of a prepacked weight (NR = 3·kLanes columns of y a step, each step's
// columns side by side) and x is read in place (row stride ldx), one value of each row broadcast a
// step: 3 loads of Ŵ and mr broadcasts for 3·mr FMAs. acc (row stride NR) carries the sums from one
// block of K to the next (first: from zero). Each sum runs over k in order with one FMA a step, as the
// stream kernel's do, so the two give the same bits.
//
// The tile is tile `part` of the `parts` tiles of rows that meet this block of Ŵ in turn. The first
// reads the block from memory and asks for its lines kPrepackAhead floats ahead; the others read it
// from L1. With more than one, they also ask between them for the next block (the next kc steps, in
// this panel or the next: the panels lie one after another) to be brought into L2, a step every
// `parts` steps of theirs, so memory is busy while the later tiles compute. Asking in the first tile
// alone left memory idle through the others: at 16 rows the products took about the reads' time
// plus the sums' rather than the larger of the two (docs/performance.md). A single tile streams
// the block and keeps the near request only: the far one cost it 3–10% there.
constexpr int kPrepackVectors = 3, kPrepackAhead = 1024;
template <int MR>
void prepacked_tile(float* acc, const float* x, int ldx, const float* wp, int kc, bool first, int part, int parts) {
  constexpr int V = kPrepackVectors, NR = V * kLanes;
  Vec c[MR][V];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < V; ++v) c[i][v] = first ? vzero() : vload(acc + i * NR + v * kLanes);
  // The tiles' steps counted in turn, e = part·kc + k: at every e that is a multiple of parts, step
  // e / parts of the next block. `wait` steps to the next such e (none when there is one tile).
  const int e0 = part * kc;
  int wait = parts > 1 ? (parts - e0 % parts) % parts : kc;
  const float* far = wp + size_t(kc) * NR + size_t((e0 + parts - 1) / parts) * NR;
  for (int k = 0; k < kc; ++k, wp += NR) {
    if (part == 0)
      for (int line = 0; line < NR; line += 16) __builtin_prefetch(wp + kPrepackAhead + line);
    if (wait-- == 0) {
      for (int line = 0; line < NR; line += 16) __builtin_prefetch(far + line, 0, 2);
      far += NR;
      wait = parts - 1;
    }
    Vec w[V];
    for (int v = 0; v < V; ++v) w[v] = vload(wp + v * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const Vec a = vset(x[size_t(i) * ldx + k]);
      for (int v = 0; v < V; ++v) c[i][v] = vfma(a, w[v], c[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < V; ++v) vstore(acc + i * NR + v * kLanes, c[i][v]);
}

// prepacked_tiles<MR>()[mr − 1] is prepacked_tile<mr>, for mr = 1 .. MR: the rows left at the edge.
template <size_t... I>
constexpr std::array<decltype(&prepacked_tile<1>), sizeof...(I)> prepacked_tile_table(std::index_sequence<I...>) {
  return {&prepacked_tile<int(I) + 1>...};
}
template <int MR>
constexpr auto prepacked_tiles() {
  return prepacked_tile_table(std::make_index_sequence<MR>());
}

}  // namespace ORDO_SIMD_NS
}  // namespace ordo
