// The AVX-512 BF16 kernel (engine/kernels/bf16_avx512.h), compiled with AVX-512 and BF16 flags
// (engine/CMakeLists.txt) and called only where engine/kernels/cpu.h finds both. No standard
// container here (gemm_avx512.cpp says why).
#include "engine/kernels/bf16_avx512.h"

#include <algorithm>
#include <cstring>

#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/tiles.h"

namespace ordo::avx512 {

namespace {

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
template <int MR, int NR>
struct Dot {
  static constexpr auto fn = &dot_tile<MR, NR>;
};
constexpr auto kTiles = tiles::table<Dot, kTileM, kTileN>();

}  // namespace

// Tasks as in int8_vnni.cpp (tiles::for_each_tile, in panels).
void bf16_dot_linear(float* y, const uint16_t* xh, const PackedBf16& w, const float* b, int M, int threads) {
  const size_t panel_elems = size_t(w.K2) * 16;
  const double flops = 2.0 * M * w.K * w.N;
  tiles::for_each_tile(M, (w.N + 15) / 16, kTileM, kTileN, 1, threads, flops, [&](int m, int mr, int p, int np) {
    const int n = 16 * p, cols = std::min(16 * np, w.N - n);
    kTiles[mr - 1][np - 1](xh + size_t(m) * w.K2, w.K2, w.w.data() + p * panel_elems, panel_elems, b ? b + n : nullptr,
                           cols, y + size_t(m) * w.N + n, w.N);
  });
}

}  // namespace ordo::avx512
