// The AVX-512 VNNI kernel (engine/kernels/int8_vnni.h), compiled with AVX-512 and VNNI flags
// (engine/CMakeLists.txt) and called only where engine/kernels/cpu.h finds both. No standard
// container here (gemm_avx512.cpp says why).
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/kernels/dot_tile_avx512.h"
#include "engine/kernels/int8_vnni.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/tiles.h"

namespace ordo::avx512 {

namespace {

// quantize_rows_u8 (T = uint8_t: 127 steps, stored as s8 + 128) and quantize_rows16 (T = int16_t,
// `top` steps): max |x| and finiteness in 16 lanes, then q = round(x / s), 16 values a step in float
// where that is exact, else 8 in double. Rows ld apart, padded.
template <class T>
void quantize_rows_t(T* q, float* s, const float* x, int M, int K, int ld, int top) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + size_t(m) * K;
    T* out = q + size_t(m) * ld;
    // max |x|, and x·0 summed: NaN when the row holds an infinity or a NaN; four of each, 64 values
    // a step, so that the max's and the sum's latencies overlap
    __m512 max[4], nonfinite[4];
    for (int j = 0; j < 4; ++j) max[j] = nonfinite[j] = _mm512_setzero_ps();
    const auto scan = [&](int j, __m512 v) {
      max[j] = _mm512_max_ps(max[j], _mm512_abs_ps(v));
      nonfinite[j] = _mm512_add_ps(nonfinite[j], _mm512_mul_ps(v, _mm512_setzero_ps()));
    };
    int k = 0;
    for (; k + 64 <= K; k += 64)
      for (int j = 0; j < 4; ++j) scan(j, _mm512_loadu_ps(row + k + 16 * j));
    for (; k + 16 <= K; k += 16) scan(0, _mm512_loadu_ps(row + k));
    scan(1, _mm512_maskz_loadu_ps(__mmask16((1u << (K - k)) - 1), row + k));
    const float largest =
        _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(max[0], max[1]), _mm512_max_ps(max[2], max[3])));
    const __m512 bad =
        _mm512_add_ps(_mm512_add_ps(nonfinite[0], nonfinite[1]), _mm512_add_ps(nonfinite[2], nonfinite[3]));
    if (largest == 0.0f || std::isnan(_mm512_reduce_add_ps(bad))) {
      // zeros or not finite: the plain function's rules (zeros; a NaN scale for the latter)
      if constexpr (sizeof(T) == 1)
        quantize_row_u8_plain(out, s + m, row, K, ld);
      else
        quantize_row16_plain(out, s + m, row, K, ld, top);
      continue;
    }
    s[m] = largest / float(top);
    const __m512d scale = _mm512_set1_pd(s[m]), inverse = _mm512_set1_pd(1.0 / double(s[m]));
    const __m256i lo = _mm256_set1_epi32(-top), hi = _mm256_set1_epi32(top);
    // 8 values from k, exactly: q = round(x / s) in double, rounded to nearest even by vcvtpd2dq as
    // nearbyint does
    const auto exact = [&](int k, __mmask8 lanes) {
      const __m512d d = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(lanes, row + k));
      // x / s without the division (reduced.h, quantize_rows16_plain): t = x·(1/s), or the half nearest
      // t, floor(t) + ½, where s·(floor(t) + ½) is x exactly
      const __m512d t = _mm512_mul_pd(d, inverse);
      const __m512d half =
          _mm512_add_pd(_mm512_roundscale_pd(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), _mm512_set1_pd(0.5));
      const __mmask8 tie = _mm512_cmp_pd_mask(_mm512_fmsub_pd(scale, half, d), _mm512_setzero_pd(), _CMP_EQ_OQ);
      const __m512d q = _mm512_mask_blend_pd(tie, t, half);
      const __m256i r = _mm256_min_epi32(hi, _mm256_max_epi32(lo, _mm512_cvtpd_epi32(q)));
      if constexpr (sizeof(T) == 1)  // u8 = s8 + 128: the sign bit flipped
        _mm_mask_storeu_epi8(out + k, lanes, _mm_xor_si128(_mm256_cvtepi32_epi8(r), _mm_set1_epi8(char(0x80))));
      else
        _mm_mask_storeu_epi16(out + k, lanes, _mm256_cvtepi32_epi16(r));
    };
    // 16 values a step in float where that gives the same integers (reduced.h, quantize_rows16_plain):
    // t = x·(1/s) more than 2⁻¹⁰ from every half; else, or where s is subnormal, the exact steps
    const bool fast = s[m] >= std::numeric_limits<float>::min();
    const __m512 inverse_f = _mm512_set1_ps(float(1.0 / double(s[m])));
    const __m512i lo16 = _mm512_set1_epi32(-top), hi16 = _mm512_set1_epi32(top);
    for (k = 0; k < K; k += 16) {
      const __mmask16 lanes = __mmask16(K - k >= 16 ? 0xFFFF : (1u << (K - k)) - 1);
      if (fast) {
        const __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, row + k), inverse_f);
        const __m512 from_half = _mm512_sub_ps(
            _mm512_sub_ps(t, _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)), _mm512_set1_ps(0.5f));
        if (!_mm512_cmp_ps_mask(_mm512_abs_ps(from_half), _mm512_set1_ps(0x1p-10f), _CMP_LT_OQ)) {
          const __m512i r = _mm512_min_epi32(
              hi16, _mm512_max_epi32(lo16, _mm512_cvt_roundps_epi32(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
          if constexpr (sizeof(T) == 1)
            _mm_mask_storeu_epi8(out + k, lanes, _mm_xor_si128(_mm512_cvtepi32_epi8(r), _mm_set1_epi8(char(0x80))));
          else
            _mm256_mask_storeu_epi16(out + k, lanes, _mm512_cvtepi32_epi16(r));
          continue;
        }
      }
      exact(k, __mmask8(lanes));
      if (lanes >> 8) exact(k + 8, __mmask8(lanes >> 8));
    }
    for (k = K; k < ld; ++k) out[k] = sizeof(T) == 1 ? T(0x80) : T(0);
  }
}

}  // namespace

void quantize_rows_u8(uint8_t* xu, float* s, const float* x, int M, int K, int K4) {
  quantize_rows_t(xu, s, x, M, K, K4, 127);
}

void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int ld, int top) {
  quantize_rows_t(q, s, x, M, K, ld, top);
}

namespace {

// Where a tile's sums go: int32 as they are (acc), or scaled to float (y) with the row scales xs,
// the column scales ws and the bias b. Pointers at the tile's first row and column; row stride ld.
struct Out {
  int32_t* acc;
  float* y;
  const float* xs;
  const float* ws;
  const float* b;
  int ld;
};

// An MR × (16·NR) tile of the output: MR rows of x against NR panels of W (dot_sums): 4 k of u8
// against s8 a step (vpdpbusd), or, Wide, 2 k of int16 against int16 (vpdpwssd: the finer grids of
// reduced.h, half the k per step); then the compensation taken off and, for y, the scales and the
// bias. `cols` (≤ 16·NR) of the tile's columns are inside y: the last panel of W may be part padding.
template <int MR, int NR, bool Wide>
void dot_tile(const uint8_t* x, size_t row_bytes, const int8_t* w, size_t panel_bytes, const int32_t* compensation,
              int cols, const Out& out) {
  alignas(64) int32_t sums[MR][NR * 16];
  if (out.acc)
    prefetch_output<MR, NR>(out.acc, size_t(out.ld));
  else
    prefetch_output<MR, NR>(out.y, size_t(out.ld));
  dot_sums<MR, NR>(sums, x, row_bytes, reinterpret_cast<const uint8_t*>(w), panel_bytes,
                   [](__m512i acc, __m512i xv, __m512i wv) {
                     return Wide ? _mm512_dpwssd_epi32(acc, xv, wv) : _mm512_dpbusd_epi32(acc, xv, wv);
                   });
  for (int j = 0; j < NR; ++j) {
    const int n = 16 * j, left = std::min(16, cols - n);
    const __mmask16 mask = __mmask16((1u << left) - 1);
    const __m512i comp = compensation ? _mm512_loadu_si512(compensation + n) : _mm512_setzero_si512();  // whole panels
    if (out.acc) {
      for (int i = 0; i < MR; ++i)
        _mm512_mask_storeu_epi32(out.acc + size_t(i) * out.ld + n, mask,
                                 _mm512_sub_epi32(_mm512_load_si512(sums[i] + n), comp));
      continue;
    }
    const __m512 ws = _mm512_maskz_loadu_ps(mask, out.ws + n);
    const __m512 b = out.b ? _mm512_maskz_loadu_ps(mask, out.b + n) : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      // y = acc · (s_x · s_w) + b, the same steps as in reduced.cpp's oneDNN path
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(out.xs[i]), ws);
      const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(sums[i] + n), comp));
      _mm512_mask_storeu_ps(out.y + size_t(i) * out.ld + n, mask, _mm512_add_ps(_mm512_mul_ps(v, scale), b));
    }
  }
}

// 8 rows × 3 panels: 24 accumulators and 3 weight vectors of the 32 registers, 3 loads and 8
// broadcasts for 24 vpdpbusd a step; at the 8 rows of a short text the weights are read once.
constexpr int kTileM = 8, kTileN = 3;
// kTiles[mr − 1][np − 1], and kWideTiles likewise: the edges too
constexpr auto kTiles = tiles::table<kTileM, kTileN>([](auto mr, auto np) { return &dot_tile<mr, np, false>; });
constexpr auto kWideTiles = tiles::table<kTileM, kTileN>([](auto mr, auto np) { return &dot_tile<mr, np, true>; });

// Tasks as tiles::for_each_tile splits them, in panels; each group of kTileN panels (16·row_bytes
// bytes each) stays in cache while a block's rows pass over it.
template <class Table>
void run(const Table& table, const uint8_t* x, size_t row_bytes, const int8_t* w, const int32_t* compensation, int N,
         int K, int M, int threads, const Out& out) {
  const size_t panel_bytes = row_bytes * 16;
  const double flops = 2.0 * M * K * N;
  tiles::for_each_tile(M, (N + 15) / 16, kTileM, kTileN, 1, threads, flops, [&](int m, int mr, int p, int np) {
    const int n = 16 * p, cols = std::min(16 * np, N - n);
    const Out o{out.acc ? out.acc + size_t(m) * out.ld + n : nullptr,
                out.y ? out.y + size_t(m) * out.ld + n : nullptr,
                out.xs ? out.xs + m : nullptr,
                out.ws ? out.ws + n : nullptr,
                out.b ? out.b + n : nullptr,
                out.ld};
    table[mr - 1][np - 1](x + m * row_bytes, row_bytes, w + p * panel_bytes, panel_bytes,
                          compensation ? compensation + n : nullptr, cols, o);
  });
}

}  // namespace

void int8_vnni_products(int32_t* acc, const uint8_t* xu, const PackedInt8& w, int M, int threads) {
  run(kTiles, xu, w.KG, w.w.data(), w.compensation.data(), w.N, w.K, M, threads,
      Out{acc, nullptr, nullptr, nullptr, nullptr, w.N});
}

void int8_vnni_linear(float* y, const uint8_t* xu, const float* xs, const PackedInt8& w, const float* ws,
                      const float* b, int M, int ld, int threads) {
  run(kTiles, xu, w.KG, w.w.data(), w.compensation.data(), w.N, w.K, M, threads, Out{nullptr, y, xs, ws, b, ld});
}

void int16_vnni(int32_t* acc, float* y, const int16_t* x, const float* xs, const int16_t* w, const float* ws,
                const float* b, int M, int N, int K2, int ld, int threads) {
  run(kWideTiles, reinterpret_cast<const uint8_t*>(x), size_t(K2) * 2, reinterpret_cast<const int8_t*>(w), nullptr, N,
      K2, M, threads, Out{acc, y, xs, ws, b, ld});
}

}  // namespace ordo::avx512
