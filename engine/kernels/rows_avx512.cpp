// The AVX-512 row kernels (engine/kernels/rows.h), compiled with AVX-512 flags (engine/CMakeLists.txt)
// and called only where engine/kernels/cpu.h allows AVX-512.
#include <cmath>

#include "engine/kernels/rows.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/simd_math.h"

namespace ordo::avx512 {

namespace {

// e^x = 2^n · e^r with n = round(x / ln 2) and |r| ≤ ln2 / 2; e^r from Cephes' expf polynomial
// (exp_remainder, simd_math.h); scalef multiplies by 2^n, going to 0 for x below about −104.
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  return _mm512_scalef_ps(simd::exp_remainder(x, n), n);
}

// The lanes of the block of 16 that starts at column j of a row of n: all, or the first n − j.
inline __mmask16 lanes(int n, int j) {
  return n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
}

}  // namespace

// Three passes, 16 columns at a time, the last block through a mask: the max, exp(z − max) and
// its sum, the normalisation. Below the floor (rows.h) the weight is 0, and exp16 is given the floor
// instead, so that no lane makes a subnormal float.
void softmax_row(float* row, int valid) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < valid; j += 16)
    vmax = _mm512_mask_max_ps(vmax, lanes(valid, j), vmax, _mm512_maskz_loadu_ps(lanes(valid, j), row + j));
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));  // exp(z − max) ≤ 1: no overflow
  const __m512 floor = _mm512_set1_ps(softmax_floor(valid));
  __m512 vsum = _mm512_setzero_ps();
  for (int j = 0; j < valid; j += 16) {
    const __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes(valid, j), row + j), max);
    const __m512 e =  // a NaN x fails the comparison too: weight 0
        _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, floor, _CMP_GE_OQ), exp16(_mm512_max_ps(x, floor)));
    _mm512_mask_storeu_ps(row + j, lanes(valid, j), e);
    vsum = _mm512_mask_add_ps(vsum, lanes(valid, j), vsum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));  // sum ≥ 1: exp(0) is one term
  for (int j = 0; j < valid; j += 16)
    _mm512_mask_storeu_ps(row + j, lanes(valid, j),
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes(valid, j), row + j), inv));
}

// With r, the sum x + r is first written to y and read back from there (the row is in L1).
// Two passes over the row: the mean, then the mean square about it (no cancellation as in
// E[x²] − E[x]²), summed in float lanes, each lane d/16 terms of the row.
void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps) {
  __m512 sum = _mm512_setzero_ps();
  if (r) {
    for (int j = 0; j < d; j += 16) {
      const __m512 s =
          _mm512_add_ps(_mm512_maskz_loadu_ps(lanes(d, j), x + j), _mm512_maskz_loadu_ps(lanes(d, j), r + j));
      _mm512_mask_storeu_ps(y + j, lanes(d, j), s);
      sum = _mm512_add_ps(sum, s);  // the masked-off lanes of s are 0
    }
    x = y;
  } else {
    for (int j = 0; j < d; j += 16) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(lanes(d, j), x + j));
  }
  const __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sum) / float(d));
  __m512 sq = _mm512_setzero_ps();
  for (int j = 0; j < d; j += 16) {
    const __m512 c = _mm512_maskz_sub_ps(lanes(d, j), _mm512_maskz_loadu_ps(lanes(d, j), x + j), mean);
    sq = _mm512_fmadd_ps(c, c, sq);
  }
  // biased variance, eps inside the root
  const __m512 inv_std = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(sq) / float(d) + eps));
  for (int j = 0; j < d; j += 16) {
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes(d, j), x + j), mean), inv_std);
    _mm512_mask_storeu_ps(y + j, lanes(d, j),
                          _mm512_fmadd_ps(xhat, _mm512_maskz_loadu_ps(lanes(d, j), gamma + j),
                                          _mm512_maskz_loadu_ps(lanes(d, j), beta + j)));
  }
}

// GELU(v) = v·Φ(v) as rows_avx2.cpp has it, 16 values at a time: with z = |v|/√2, Φ(v) = ½·erfc(z)
// for v < 0 and 1 − ½·erfc(z) for v ≥ 0, erfc(z) = t·exp(−z² − 1.26551223 + t·P(t)), t = 1/(1 + z/2),
// P the degree-8 Chebyshev fit of Numerical Recipes §6.2 (erfc_exponent, simd_math.h).
void gelu(float* x, size_t n) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  for (size_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + j);
    const __m512 z = _mm512_mul_ps(_mm512_abs_ps(v), _mm512_set1_ps(0.70710678118654752f));
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(z, half, one));
    const __m512 tail = _mm512_mul_ps(half, _mm512_mul_ps(t, exp16(simd::erfc_exponent(z, t))));  // ½·erfc(z)
    const __mmask16 negative = _mm512_movepi32_mask(_mm512_castps_si512(v));  // v's sign bit picks the tail
    const __m512 phi = _mm512_mask_blend_ps(negative, _mm512_sub_ps(one, tail), tail);
    _mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(v, phi));
  }
}

// GELUTanh(v) = v / (1 + e^(−2u)),  u = √(2/π)·(v + 0.044715·v³), as rows_avx2.cpp has it.
void gelu_tanh(float* x, size_t n) {
  const __m512 c = _mm512_set1_ps(-2.0f * 0.79788456080286536f), a = _mm512_set1_ps(0.044715f);
  for (size_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + j);
    // at most 88.75 as at AVX2 (e^88.75 is finite: v / (1 + e^(−2u)) goes to −0, never to NaN)
    const __m512 minus_2u = _mm512_min_ps(
        _mm512_mul_ps(c, _mm512_fmadd_ps(_mm512_mul_ps(a, v), _mm512_mul_ps(v, v), v)), _mm512_set1_ps(88.75f));
    _mm512_mask_storeu_ps(x + j, m, _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(minus_2u))));
  }
}

}  // namespace ordo::avx512

namespace ordo {
const RowKernels kRowsAvx512 = {avx512::softmax_row, avx512::layer_norm_row, avx512::gelu, avx512::gelu_tanh};
}  // namespace ordo
