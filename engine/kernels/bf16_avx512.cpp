#include "engine/kernels/bf16_avx512.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/kernels/simd.h"

namespace ordo {

PackedBf16 pack_bf16(const uint16_t* w, int N, int K) {
  PackedBf16 p;
  p.N = N, p.K = K, p.K2 = (K + 1) / 2 * 2;
  const int panels = (N + 15) / 16;
  p.w.assign(size_t(panels) * p.K2 * 16, 0);
  for (int n = 0; n < N; ++n) {
    uint16_t* panel = p.w.data() + size_t(n / 16) * p.K2 * 16;
    for (int k = 0; k < K; ++k) panel[size_t(k / 2) * 32 + (n % 16) * 2 + k % 2] = w[size_t(n) * K + k];
  }
  return p;
}

void to_bf16_rows(uint16_t* xh, const float* x, int M, int K, int K2) {
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) xh[size_t(m) * K2 + k] = to_bf16(x[size_t(m) * K + k]);
    for (int k = K; k < K2; ++k) xh[size_t(m) * K2 + k] = 0;
  }
}

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

namespace {

// The loops over the tile's rows and panels unrolled whole, so that each accumulator is a register
// of its own (int8_vnni.cpp says what GCC 12 did without it).
#define ORDO_UNROLL _Pragma("GCC unroll 16")

// An MR × (16·NR) tile of y: MR rows of x against NR panels of W, MR·NR vectors of 16 float sums
// in registers along K. Each step of 2 k loads NR panels' 64 bytes once and broadcasts one pair
// of each row of x to all 16 lanes. `cols` (≤ 16·NR) of the tile's columns are inside y.
template <int MR, int NR>
void dot_tile(const uint16_t* x, int K2, const uint16_t* w, size_t panel_elems, const float* b, int cols, float* y,
              int ldy) {
  __m512 acc[MR][NR];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int k = 0; k < K2; k += 2) {
    __m512bh wv[NR];
    ORDO_UNROLL for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(w + j * panel_elems + size_t(k) * 16);
    ORDO_UNROLL for (int i = 0; i < MR; ++i) {
      int32_t pair;
      std::memcpy(&pair, x + size_t(i) * K2 + k, 4);
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
      ORDO_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
    }
  }
  // out through a tile of memory, as in int8_vnni.cpp (which says why)
  alignas(64) float sums[MR][NR * 16];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < NR; ++j)
      _mm512_store_ps(sums[i] + 16 * j, acc[i][j]);
  for (int j = 0; j < NR; ++j) {
    const int n = 16 * j, left = std::min(16, cols - n);
    const __mmask16 mask = __mmask16((1u << left) - 1);
    const __m512 bias = b ? _mm512_maskz_loadu_ps(mask, b + n) : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i)
      _mm512_mask_storeu_ps(y + size_t(i) * ldy + n, mask, _mm512_add_ps(_mm512_load_ps(sums[i] + n), bias));
  }
}

constexpr int kTileM = 8, kTileN = 3;  // as int8_vnni.cpp's
using DotTile = void (*)(const uint16_t*, int, const uint16_t*, size_t, const float*, int, float*, int);
template <int MR, int... NR>
constexpr std::array<DotTile, kTileN> tile_row(std::integer_sequence<int, NR...>) {
  return {dot_tile<MR, NR + 1>...};
}
template <int... MR>
constexpr std::array<std::array<DotTile, kTileN>, kTileM> tile_table(std::integer_sequence<int, MR...>) {
  return {tile_row<MR + 1>(std::make_integer_sequence<int, kTileN>{})...};
}
constexpr std::array<std::array<DotTile, kTileN>, kTileM> kTiles =
    tile_table(std::make_integer_sequence<int, kTileM>{});

}  // namespace

// Tasks as in int8_vnni.cpp: blocks of 64 rows × an equal share of the panels per thread.
void bf16_dot_linear(float* y, const uint16_t* xh, const PackedBf16& w, const float* b, int M, int threads) {
  if (M == 0 || w.N == 0) return;
  constexpr int kRowsPerTask = 64;
  const int panels = (w.N + 15) / 16;
  const int share = (panels + threads - 1) / threads, col_tasks = (panels + share - 1) / share;
  const int row_blocks = (M + kRowsPerTask - 1) / kRowsPerTask;
  const size_t panel_elems = size_t(w.K2) * 16;
  auto task = [&](int t, int) {
    const int m0 = t % row_blocks * kRowsPerTask, m_end = std::min(M, m0 + kRowsPerTask);
    const int p0 = t / row_blocks * share, p_end = std::min(panels, p0 + share);
    for (int p = p0; p < p_end; p += kTileN) {
      const int np = std::min(kTileN, p_end - p), n = 16 * p, cols = std::min(16 * np, w.N - n);
      for (int m = m0; m < m_end; m += kTileM)
        kTiles[std::min(kTileM, m_end - m) - 1][np - 1](xh + size_t(m) * w.K2, w.K2, w.w.data() + p * panel_elems,
                                                        panel_elems, b ? b + n : nullptr, cols, y + size_t(m) * w.N + n,
                                                        w.N);
    }
  };
  const int tasks = row_blocks * col_tasks;
  if (threads <= 1 || tasks == 1)
    for (int t = 0; t < tasks; ++t) task(t, 0);
  else
    parallel_for(tasks, task);
}

#else  // no AVX-512 BF16 in this build: never called (kHaveBf16Dot is false)

void bf16_dot_linear(float*, const uint16_t*, const PackedBf16&, const float*, int, int) {
  throw std::logic_error("bf16_dot_linear: this build has no AVX-512 BF16");
}

#endif

}  // namespace ordo
