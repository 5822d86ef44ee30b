// Compiled with -mavx2 -mfma (engine/CMakeLists.txt) and called only where the CPU has both. It
// includes no header whose inline functions other files compile too with other flags, but for the
// tile helpers, whose instances here are this file's own.
#include "engine/kernels/reduced_avx2.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/tiles.h"

namespace ordo::avx2 {

namespace {

// An MR × (16·NP) tile of the integer product: MR rows of x against NP panels of W, 2·MR·NP vectors
// of 8 int32 sums in registers along K. Each step of 2 k loads NP panels' 16-bit pairs (int8 W
// widened with vpmovsxbw, int16 W as it is) once and broadcasts a pair of each row of x to all 8 lanes.
template <class W>
__m256i pairs(const W* group) {  // 8 columns × 2 k of W as 16 int16
  if constexpr (sizeof(W) == 1)
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group)));
  else
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group));
}

constexpr size_t kPanelAhead = 1024;  // bytes of W ahead of the step asked for

template <int MR, int NP, class W>
void int_tile(const int16_t* x, int K2, const W* w, size_t panel_elems, int cols, int32_t* acc_out, float* y,
              const float* xs, const float* ws, const float* b, int ld) {
  __m256i acc[MR][2 * NP];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < 2 * NP; ++j) acc[i][j] =
      _mm256_setzero_si256();
  // the tile's lines of the output asked for before the k loop (as dot_tile_avx512.h does; a read
  // here, where not every CPU has PREFETCHW): its first and last element of each row
  const char* out = acc_out ? reinterpret_cast<const char*>(acc_out) : reinterpret_cast<const char*>(y);
  ORDO_UNROLL for (int i = 0; i < MR; ++i) {  // int32 or float: 4 bytes an element
    _mm_prefetch(out + 4 * size_t(i) * ld, _MM_HINT_T0);
    _mm_prefetch(out + 4 * (size_t(i) * ld + 16 * NP - 1), _MM_HINT_T0);
  }
  for (int k = 0; k < K2; k += 2) {
    __m256i wv[2 * NP];
    ORDO_UNROLL for (int j = 0; j < NP; ++j) {
      const W* group = w + j * panel_elems + size_t(k) * 16;  // columns 0-7, then 8-15, a pair each
      wv[2 * j] = pairs(group);
      wv[2 * j + 1] = pairs(group + 16);
      _mm_prefetch(reinterpret_cast<const char*>(group + kPanelAhead / sizeof(W)), _MM_HINT_T0);  // never faults
    }
    ORDO_UNROLL for (int i = 0; i < MR; ++i) {
      int32_t pair;
      std::memcpy(&pair, x + size_t(i) * K2 + k, 4);
      const __m256i xv = _mm256_set1_epi32(pair);
      ORDO_UNROLL for (int j = 0; j < 2 * NP; ++j) acc[i][j] =
          _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(xv, wv[j]));
    }
  }
  alignas(32) int32_t sums[MR][16 * NP];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) ORDO_UNROLL for (int j = 0; j < 2 * NP; ++j)
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums[i] + 8 * j), acc[i][j]);
  if (y && cols == 16 * NP) {  // whole panels: 8 columns a step, the same steps as the loop below
    for (int n = 0; n < cols; n += 8) {
      const __m256 wsv = _mm256_loadu_ps(ws + n), bv = b ? _mm256_loadu_ps(b + n) : _mm256_setzero_ps();
      ORDO_UNROLL for (int i = 0; i < MR; ++i) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sums[i] + n)));
        _mm256_storeu_ps(y + size_t(i) * ld + n,
                         _mm256_add_ps(_mm256_mul_ps(v, _mm256_mul_ps(_mm256_set1_ps(xs[i]), wsv)), bv));
      }
    }
    return;
  }
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < cols; ++n) {
      if (acc_out)
        acc_out[size_t(i) * ld + n] = sums[i][n];
      else  // y = acc · (s_x · s_w) + b, the same steps as in reduced.cpp's other paths
        y[size_t(i) * ld + n] = float(sums[i][n]) * (xs[i] * ws[n]) + (b ? b[n] : 0.0f);
    }
}

// 4 rows × 1 panel: 8 accumulators, 2 weight vectors and a broadcast of the 16 registers.
constexpr int kInt8TileM = 4, kInt8TileN = 1;
constexpr auto kInt8Tiles =
    tiles::table<kInt8TileM, kInt8TileN>([](auto mr, auto np) { return &int_tile<mr, np, int8_t>; });
constexpr auto kInt16Tiles =
    tiles::table<kInt8TileM, kInt8TileN>([](auto mr, auto np) { return &int_tile<mr, np, int16_t>; });

template <class W, class Tiles>
void int_products(const Tiles& table, int32_t* acc, float* y, const int16_t* xw, const float* xs, const W* w,
                  const float* ws, const float* b, int M, int N, int K2, int ld, int threads) {
  const size_t panel_elems = size_t(K2) * 16;
  const double flops = 2.0 * M * K2 * N;
  tiles::for_each_tile(M, (N + 15) / 16, kInt8TileM, kInt8TileN, 1, threads, flops, [&](int m, int mr, int p, int np) {
    const int n = 16 * p, cols = std::min(16 * np, N - n);
    table[mr - 1][np - 1](xw + size_t(m) * K2, K2, w + p * panel_elems, panel_elems, cols,
                          acc ? acc + size_t(m) * ld + n : nullptr, y ? y + size_t(m) * ld + n : nullptr,
                          xs ? xs + m : nullptr, ws ? ws + n : nullptr, b ? b + n : nullptr, ld);
  });
}

// An MR × 16 tile of the bf16 product: each step widens one panel's 16 bf16 of W to two vectors of
// floats and broadcasts one float of each row of x.
template <int MR, int NP>
void bf16_tile(const float* x, int K, const uint16_t* w, int cols, const float* b, float* y, int ld) {
  static_assert(NP == 1, "one panel: 2·MR accumulators");
  __m256 acc[MR][2];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const uint16_t* row = w + size_t(k) * 16;
    const __m256 w0 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row))), 16));
    const __m256 w1 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8))), 16));
    ORDO_UNROLL for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_broadcast_ss(x + size_t(i) * K + k);
      acc[i][0] = _mm256_fmadd_ps(xv, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(xv, w1, acc[i][1]);
    }
  }
  alignas(32) float sums[MR][16];
  ORDO_UNROLL for (int i = 0; i < MR; ++i) {
    _mm256_store_ps(sums[i], acc[i][0]);
    _mm256_store_ps(sums[i] + 8, acc[i][1]);
  }
  for (int i = 0; i < MR; ++i)
    for (int n = 0; n < cols; ++n) y[size_t(i) * ld + n] = sums[i][n] + (b ? b[n] : 0.0f);
}

// 6 rows: 12 accumulators, 2 weight vectors and a broadcast of the 16 registers.
constexpr int kBf16TileM = 6;
constexpr auto kBf16Tiles = tiles::table<kBf16TileM, 1>([](auto mr, auto np) { return &bf16_tile<mr, np>; });

}  // namespace

void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int ld, int top) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + size_t(m) * K;
    int16_t* out = q + size_t(m) * ld;
    // max |x|, and x·0 summed: NaN when the row holds an infinity or a NaN; four of each, 32 values
    // a step, so that the max's and the sum's latencies overlap
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 max[4], nonfinite[4];
    for (int j = 0; j < 4; ++j) max[j] = nonfinite[j] = _mm256_setzero_ps();
    const auto scan = [&](int j, __m256 v) {
      max[j] = _mm256_max_ps(max[j], _mm256_andnot_ps(sign, v));
      nonfinite[j] = _mm256_add_ps(nonfinite[j], _mm256_mul_ps(v, _mm256_setzero_ps()));
    };
    int k = 0;
    for (; k + 32 <= K; k += 32)
      for (int j = 0; j < 4; ++j) scan(j, _mm256_loadu_ps(row + k + 8 * j));
    for (; k + 8 <= K; k += 8) scan(0, _mm256_loadu_ps(row + k));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(_mm256_max_ps(max[0], max[1]), _mm256_max_ps(max[2], max[3])));
    float largest = 0.0f, bad = 0.0f;
    for (float l : lanes) largest = std::max(largest, l);
    _mm256_store_ps(
        lanes, _mm256_add_ps(_mm256_add_ps(nonfinite[0], nonfinite[1]), _mm256_add_ps(nonfinite[2], nonfinite[3])));
    for (float l : lanes) bad += l;
    for (int t = k; t < K; ++t) largest = std::max(largest, std::fabs(row[t])), bad += row[t] * 0.0f;
    if (largest == 0.0f || std::isnan(bad)) {  // zeros or not finite: the plain function's rules
      quantize_row16_plain(out, s + m, row, K, ld, top);
      continue;
    }
    s[m] = largest / float(top);
    const __m256d scale = _mm256_set1_pd(s[m]), inverse = _mm256_set1_pd(1.0 / double(s[m]));
    const __m128i lo = _mm_set1_epi32(-top), hi = _mm_set1_epi32(top);
    // 4 values from k, exactly: q = round(x / s) in double (vcvtpd2dq rounds to nearest even, as
    // nearbyint does), the quotient without the division (reduced.h, quantize_rows16_plain): t = x·(1/s),
    // or the half nearest t, floor(t) + ½, where s·(floor(t) + ½) is x exactly
    const auto exact = [&](int k) {
      const __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(row + k));
      const __m256d t = _mm256_mul_pd(d, inverse);
      const __m256d half = _mm256_add_pd(_mm256_floor_pd(t), _mm256_set1_pd(0.5));
      const __m256d tie = _mm256_cmp_pd(_mm256_fmsub_pd(scale, half, d), _mm256_setzero_pd(), _CMP_EQ_OQ);
      const __m256d q = _mm256_blendv_pd(t, half, tie);
      const __m128i r = _mm_min_epi32(hi, _mm_max_epi32(lo, _mm256_cvtpd_epi32(q)));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packs_epi32(r, r));
    };
    // 8 values a step in float where that gives the same integers (reduced.h, quantize_rows16_plain):
    // t = x·(1/s) more than 2⁻¹⁰ from every half; else, or where s is subnormal, the exact steps
    const bool fast = s[m] >= std::numeric_limits<float>::min();
    const __m256 inverse_f = _mm256_set1_ps(float(1.0 / double(s[m])));
    const __m256i lo8 = _mm256_set1_epi32(-top), hi8 = _mm256_set1_epi32(top);
    for (k = 0; k + 8 <= K; k += 8) {
      if (fast) {
        const __m256 t = _mm256_mul_ps(_mm256_loadu_ps(row + k), inverse_f);
        const __m256 from_half = _mm256_sub_ps(_mm256_sub_ps(t, _mm256_floor_ps(t)), _mm256_set1_ps(0.5f));
        const __m256 near = _mm256_cmp_ps(_mm256_andnot_ps(sign, from_half), _mm256_set1_ps(0x1p-10f), _CMP_LT_OQ);
        if (!_mm256_movemask_ps(near)) {
          const __m256i r = _mm256_min_epi32(hi8, _mm256_max_epi32(lo8, _mm256_cvtps_epi32(t)));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k),
                           _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
          continue;
        }
      }
      exact(k);
      exact(k + 4);
    }
    for (; k + 4 <= K; k += 4) exact(k);
    for (; k < K; ++k) {
      const double r = std::nearbyint(double(row[k]) / double(s[m]));
      out[k] = int16_t(r < -top ? -top : r > top ? top : r);
    }
    for (k = K; k < ld; ++k) out[k] = 0;
  }
}

void int8_products(int32_t* acc, float* y, const int16_t* xw, const float* xs, const int8_t* w, const float* ws,
                   const float* b, int M, int N, int K2, int ld, int threads) {
  int_products(kInt8Tiles, acc, y, xw, xs, w, ws, b, M, N, K2, ld, threads);
}

void int16_products(int32_t* acc, float* y, const int16_t* xw, const float* xs, const int16_t* w, const float* ws,
                    const float* b, int M, int N, int K2, int ld, int threads) {
  int_products(kInt16Tiles, acc, y, xw, xs, w, ws, b, M, N, K2, ld, threads);
}

void bf16_linear(float* y, const float* xr, const uint16_t* w, const float* b, int M, int N, int K, int threads) {
  const size_t panel_elems = size_t(K) * 16;
  const double flops = 2.0 * M * K * N;
  tiles::for_each_tile(M, (N + 15) / 16, kBf16TileM, 1, 1, threads, flops, [&](int m, int mr, int p, int) {
    const int n = 16 * p, cols = std::min(16, N - n);
    kBf16Tiles[mr - 1][0](xr + size_t(m) * K, K, w + p * panel_elems, cols, b ? b + n : nullptr, y + size_t(m) * N + n,
                          N);
  });
}

}  // namespace ordo::avx2
