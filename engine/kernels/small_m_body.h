// The small-M kernel (engine/kernels/small_m.h), written once against simd.h's vector and compiled
// once per instruction set: small_m_avx2.cpp and small_m_avx512.cpp include this file with their
// flags and ORDO_KERNEL_NS (avx2, avx512) set.
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include "engine/kernels/parallel.h"
#include "engine/kernels/simd.h"
#include "engine/kernels/small_m.h"
#include "engine/kernels/tiles.h"

namespace ordo::ORDO_KERNEL_NS {

namespace {

using namespace simd;

// At a few rows of x the kernel waits on memory: every weight is read once, and the rows of W are
// short streams (2–8 KB) that the hardware prefetchers, which stop at 4 KB page boundaries, barely
// get going on. So the kernel asks for lines itself: while it works on one tile of NR rows of W it
// asks for the same columns of the next tile's rows, and for the line 1 KB ahead in its own rows
// (which covers the first tile of a block). Every pass over a tile asks again: asking in the first
// pass only measured slower, and either look-ahead alone slower than both (docs/performance.md).
constexpr int kPrefetchAhead = 256;

// Each vector of W and of x is loaded once per step and used from a register by every product it
// takes part in. Left to itself, GCC 12 folds the loads of W into the FMAs as memory operands (one
// load per FMA: MR·NR loads a step instead of MR + NR), and with the prefetches that made the loop
// wait on the load ports, not on the FMAs or on memory: the pinned loads measured 0.55 against
// 1.0 ms for one layer's products in cache at M = 8 (docs/performance.md). AVX2 has 16 registers,
// so its tile is 4 × 3 (12 accumulators, 3 of W, 1 of x) rather than 4 × 4, whose accumulators
// alone fill them all and leave every operand of W to be loaded by its FMA.
inline void in_register([[maybe_unused]] Vec& v) {
  asm("" : "+v"(v));
}

// y[m][n] = b[n] + Σ_k x[m][k]·w[n][k]   for an MR × NR tile: MR rows of x against NR rows of W,
// MR·NR dot products kept in registers along K, one horizontal sum each at the end.
template <int MR, int NR>
void dot_tile(float* y, int ldy, const float* x, const float* w, const float* b, int K) {
  Vec acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vzero();
  int k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    for (int j = 0; j < NR; ++j) {
      __builtin_prefetch(w + size_t(NR + j) * K + k);
      __builtin_prefetch(w + size_t(j) * K + k + kPrefetchAhead);
    }
    Vec wv[NR];
    for (int j = 0; j < NR; ++j) {
      wv[j] = vload(w + size_t(j) * K + k);
      in_register(wv[j]);
    }
    for (int i = 0; i < MR; ++i) {
      Vec xv = vload(x + size_t(i) * K + k);
      in_register(xv);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfma(xv, wv[j], acc[i][j]);
    }
  }
  if (k < K) {  // the last K mod kLanes columns, through a masked load
    Vec wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = vload_first(w + size_t(j) * K + k, K - k);
    for (int i = 0; i < MR; ++i) {
      const Vec xv = vload_first(x + size_t(i) * K + k, K - k);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfma(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) y[size_t(i) * ldy + j] = vsum(acc[i][j]) + (b ? b[j] : 0.0f);
}

// With 16 lanes (AVX-512), 4 rows of x against 6 rows of W: 24 accumulators, 6 + 1 registers for
// the operands, 10 loads and 6 + 6 prefetches for 24 FMAs a step (2 × 8 took 10 loads and 16
// prefetches for 16). Measured against 2 × 8, 8 × 3, 8 × 2 and 4 × 4 in docs/performance.md.
// With 8 lanes (AVX2), 4 × 3: 7 loads and 3 + 3 prefetches for 12 FMAs a step (the 4 × 4 tile
// took 20 loads for 16; 4 × 3 measured 0.56–0.78 of its time at M = 8 and 16, docs/performance.md).
constexpr int kTileM = 4, kTileN = kLanes == 16 ? 6 : 3;
// kTiles[mr − 1][nr − 1]: the edges too
constexpr auto kTiles = tiles::table<kTileM, kTileN>([](auto mr, auto nr) { return &dot_tile<mr, nr>; });

}  // namespace

// Tasks as tiles::for_each_tile splits them: each thread streams one contiguous run of W rows, tile
// after tile, which is what the prefetch above follows (handing out 32-column blocks as threads came
// free measured slower).
void linear_small_m(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  const double flops = 2.0 * M * K * N;
  tiles::for_each_tile(M, N, kTileM, kTileN, kTileN, kernel_threads(), flops, [&](int m, int mr, int n, int nr) {
    kTiles[mr - 1][nr - 1](y + size_t(m) * N + n, N, x + size_t(m) * K, w + size_t(n) * K, b ? b + n : nullptr, K);
  });
}

}  // namespace ordo::ORDO_KERNEL_NS
