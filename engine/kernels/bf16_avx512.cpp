// The AVX-512 BF16 kernel (engine/kernels/bf16_avx512.h), compiled with AVX-512 and BF16 flags
// (engine/CMakeLists.txt) and called only where engine/kernels/cpu.h finds both. No standard
// container here (gemm_avx512.cpp says why).
#include "engine/kernels/bf16_avx512.h"

#include <algorithm>

#include "engine/kernels/dot_tile_avx512.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/tiles.h"

namespace ordo::avx512 {

namespace {

// An MR × (16·NR) tile of y: MR rows of x against NR panels of W (dot_sums, 2 k a step: one pair of
// each row of x against 16 columns' pairs), then the bias. `cols` (≤ 16·NR) of the tile's columns
// are inside y.
template <int MR, int NR>
void dot_tile(const uint16_t* x, int K2, const uint16_t* w, size_t panel_elems, const float* b, int cols, float* y,
              int ldy) {
  alignas(64) float sums[MR][NR * 16];
  prefetch_output<MR, NR>(y, size_t(ldy));
  dot_sums<MR, NR>(sums, reinterpret_cast<const uint8_t*>(x), size_t(K2) * 2, reinterpret_cast<const uint8_t*>(w),
                   panel_elems * 2, [](__m512i acc, __m512i xv, __m512i wv) {
                     return _mm512_castps_si512(_mm512_dpbf16_ps(_mm512_castsi512_ps(acc), (__m512bh)xv, (__m512bh)wv));
                   });
  for (int j = 0; j < NR; ++j) {
    const int n = 16 * j, left = std::min(16, cols - n);
    const __mmask16 mask = __mmask16((1u << left) - 1);
    const __m512 bias = b ? _mm512_maskz_loadu_ps(mask, b + n) : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i)
      _mm512_mask_storeu_ps(y + size_t(i) * ldy + n, mask, _mm512_add_ps(_mm512_load_ps(sums[i] + n), bias));
  }
}

constexpr int kTileM = 8, kTileN = 3;  // as int8_vnni.cpp's
constexpr auto kTiles = tiles::table<kTileM, kTileN>([](auto mr, auto nr) { return &dot_tile<mr, nr>; });

}  // namespace

// Tasks as in int8_vnni.cpp (tiles::for_each_tile, in panels).
void bf16_dot_linear(float* y, const uint16_t* xh, const PackedBf16& w, const float* b, int M, int threads) {
  const size_t panel_elems = size_t(w.KG) * 16;
  const double flops = 2.0 * M * w.K * w.N;
  tiles::for_each_tile(M, (w.N + 15) / 16, kTileM, kTileN, 1, threads, flops, [&](int m, int mr, int p, int np) {
    const int n = 16 * p, cols = std::min(16 * np, w.N - n);
    kTiles[mr - 1][np - 1](xh + size_t(m) * w.KG, w.KG, w.w.data() + p * panel_elems, panel_elems, b ? b + n : nullptr,
                           cols, y + size_t(m) * w.N + n, w.N);
  });
}

}  // namespace ordo::avx512
