// The AVX2 and FMA row kernels (engine/kernels/rows.h), compiled with -mavx2 -mfma
// (engine/CMakeLists.txt) and called only where engine/kernels/cpu.h allows AVX2. The same steps as
// rows_avx512.cpp, 8 floats at a time: whole blocks through plain loads and stores, the last
// n mod 8 through masked ones (which read and write nothing outside their lanes).
#include <cmath>

#include "engine/kernels/rows.h"
#include "engine/kernels/simd.h"  // <immintrin.h>, with GCC 12's false warnings silenced
#include "engine/kernels/simd_math.h"

namespace ordo::avx2 {

namespace {

// The first n lanes (n < 8) set, for a masked load or store.
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The 8 floats at p, or the first `left` of them (the others 0) when left < 8.
inline __m256 load(const float* p, int left) {
  return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, first_lanes(left));
}
inline void store(float* p, __m256 v, int left) {
  if (left >= 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, first_lanes(left), v);
}
// v with the lanes from `left` on set to 0 (they hold what a masked load's 0 became).
inline __m256 keep(__m256 v, int left) {
  return left >= 8 ? v : _mm256_and_ps(v, _mm256_castsi256_ps(first_lanes(left)));
}

inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline float min8(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_movehdup_ps(m)));
}
inline float max8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// 2^k for integer k in [−126, 127]: k + 127 in the exponent bits.
inline __m256 pow2(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// e^x = 2^n · e^r with n = round(x / ln 2) and |r| ≤ ln 2 / 2, e^r from Cephes' expf polynomial
// (exp_remainder, simd_math.h), as exp16 in rows_avx512.cpp. AVX2 has no scalef: 2^n is built in the
// exponent bits, as 2^⌊n/2⌋ · 2^(n − ⌊n/2⌋) so that each factor is a normal float for every n in
// [−150, 128]; a result below the normal range is rounded once, by the last product, as scalef
// rounds it, so the two kernels give the same bits. x is first held to [−104, 88.75]: below, e^x
// is 0 in float; above, infinity.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(88.75f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 p = simd::exp_remainder(x, n);
  const __m256i k = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(k, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(half)), pow2(_mm256_sub_epi32(k, half)));
}

// exp8 for the softmax's arguments x = z − max ≤ 0, with the same bits as exp8 and fewer
// instructions: n = round(x / ln 2) is converted to an integer once (ties to even, as
// _mm256_round_ps rounds), and back; the upper bound is left out (it changes nothing for x ≤ 0).
// Every x it is given is at least the row's floor (rows.h), −87 or more, so n ≥ −126, and at
// n = −126 (x < −86.98) e^r ≥ 1.4: 2^n · e^r is a normal float, and n is added to the exponent bits
// of e^r, which is exact (and what AVX-512's scalef gives). Chosen for a whole row by softmax_row:
//  - Normal: every x of the row is at least the floor; nothing else is done. A NaN comes out as
//    NaN (softmax_row puts 0 there, what the mask makes of it below).
//  - Any: x is held to the floor first, and the lanes below it (and NaN) get 0.
// Both are branch-free. Before the floor the weights below the normal range were rounded to
// subnormal floats in integers, as scalef rounds them, so that Zen 4 did not take exp8's slow
// second product (docs/performance.md); with the floor there are none to round.
template <bool Normal>
inline __m256 exp8_nonpositive(__m256 x, __m256 floor) {
  __m256 kept = _mm256_setzero_ps();
  if (!Normal) {
    kept = _mm256_cmp_ps(x, floor, _CMP_GE_OQ);  // false for NaN
    x = _mm256_max_ps(x, floor);                 // a NaN x becomes the floor
  }
  const __m256i k = _mm256_cvtps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)));
  const __m256 n = _mm256_cvtepi32_ps(k);  // round(x / ln 2)
  const __m256 p = simd::exp_remainder(x, n);
  const __m256 e = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(k, 23)));  // n added to p's exponent
  return Normal ? e : _mm256_and_ps(e, kept);
}

// sum(f(j, left)) over the blocks of 8 of a row of n, j = 0, 8, 16, …, left = n − j, into two sets
// of 8 lanes taken in turn (16 lanes, as at AVX-512: at 8192 keys each lane adds 512 terms; and two
// chains of additions instead of one).
template <class F>
inline __m256 sum_blocks(int n, F f) {
  __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
  int j = 0;
  for (; j + 16 <= n; j += 16) {
    even = _mm256_add_ps(even, f(j, 16));
    odd = _mm256_add_ps(odd, f(j + 8, 8));
  }
  for (; j < n; j += 8) even = _mm256_add_ps(even, f(j, n - j));
  return _mm256_add_ps(even, odd);
}

}  // namespace

// exp(z − max) over the row, each block stored and added into `even` or `odd` in sum_blocks' order.
template <bool Normal>
inline void exp_row(float* row, int valid, __m256 max, __m256 floor, __m256& even, __m256& odd) {
  int j = 0;
  for (; j + 16 <= valid; j += 16) {
    const __m256 e0 = exp8_nonpositive<Normal>(_mm256_sub_ps(_mm256_loadu_ps(row + j), max), floor);
    const __m256 e1 = exp8_nonpositive<Normal>(_mm256_sub_ps(_mm256_loadu_ps(row + j + 8), max), floor);
    _mm256_storeu_ps(row + j, e0);
    _mm256_storeu_ps(row + j + 8, e1);
    even = _mm256_add_ps(even, e0);
    odd = _mm256_add_ps(odd, e1);
  }
  for (; j < valid; j += 8) {
    const int left = valid - j;
    const __m256 e = keep(exp8_nonpositive<Normal>(_mm256_sub_ps(load(row + j, left), max), floor), left);
    store(row + j, e, left);
    even = _mm256_add_ps(even, e);
  }
}

// Three passes, 8 columns at a time: the max (and the least score), exp(z − max) and its sum, the
// normalisation. Each pass runs over whole blocks of 32 or 16 columns with several independent
// registers (four maxima, two sums), so that no pass waits on one chain of dependent instructions,
// and the last n mod 16 columns go 8 at a time through masked loads and stores. The sums are added
// in sum_blocks' order (two sets of 8 lanes in turn, the tail in the first), so the weights keep
// their bits.
void softmax_row(float* row, int valid) {
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  __m256 least = _mm256_set1_ps(INFINITY);  // of the scores that are not NaN: min_ps(z, ·) skips a NaN z
  int j = 0;
  for (; j + 32 <= valid; j += 32) {
    const __m256 z0 = _mm256_loadu_ps(row + j), z1 = _mm256_loadu_ps(row + j + 8), z2 = _mm256_loadu_ps(row + j + 16),
                 z3 = _mm256_loadu_ps(row + j + 24);
    m0 = _mm256_max_ps(m0, z0);
    m1 = _mm256_max_ps(m1, z1);
    m2 = _mm256_max_ps(m2, z2);
    m3 = _mm256_max_ps(m3, z3);
    least = _mm256_min_ps(_mm256_min_ps(z0, z1), least);
    least = _mm256_min_ps(_mm256_min_ps(z2, z3), least);
  }
  for (; j < valid; j += 8) {
    const __m256 z = load(row + j, valid - j);
    const __m256 in = _mm256_castsi256_ps(first_lanes(valid - j));
    m0 = _mm256_max_ps(m0, valid - j >= 8 ? z : _mm256_blendv_ps(m0, z, in));
    least = _mm256_min_ps(valid - j >= 8 ? z : _mm256_blendv_ps(least, z, in), least);
  }
  const float top = max8(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  const __m256 max = _mm256_set1_ps(top);
  const float lowest = softmax_floor(valid);
  const __m256 floor = _mm256_set1_ps(lowest);
  // exp(z − max) ≤ 1: no overflow. Every z − max ≥ fl(least − max) (rounding keeps the order), which
  // is −fl(max − least); the comparison is false when the max is NaN or +∞ or a score is −∞.
  __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
  if (top - min8(least) <= -lowest) {
    exp_row<true>(row, valid, max, floor, even, odd);
    if (std::isnan(sum8(_mm256_add_ps(even, odd)))) {  // a NaN score: its weight is 0, as below
      for (j = 0; j < valid; ++j)
        if (std::isnan(row[j])) row[j] = 0.0f;
      odd = _mm256_setzero_ps();
      even = sum_blocks(valid, [&](int at, int left) { return load(row + at, left); });
    }
  } else {
    exp_row<false>(row, valid, max, floor, even, odd);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum8(_mm256_add_ps(even, odd)));  // sum ≥ 1: exp(0) is one term
  for (j = 0; j + 16 <= valid; j += 16) {
    _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv));
    _mm256_storeu_ps(row + j + 8, _mm256_mul_ps(_mm256_loadu_ps(row + j + 8), inv));
  }
  for (; j < valid; j += 8) store(row + j, _mm256_mul_ps(load(row + j, valid - j), inv), valid - j);
}

// As in rows_avx512.cpp: with r, x + r is written to y and read back from there; then the mean and
// the mean square about it, each summed in float lanes (sum_blocks).
void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps) {
  __m256 sum;
  if (r) {
    sum = sum_blocks(d, [&](int j, int left) {
      const __m256 s = _mm256_add_ps(load(x + j, left), load(r + j, left));  // 0 in the lanes past d
      store(y + j, s, left);
      return s;
    });
    x = y;
  } else {
    sum = sum_blocks(d, [&](int j, int left) { return load(x + j, left); });
  }
  const __m256 mean = _mm256_set1_ps(sum8(sum) / float(d));
  const __m256 sq = sum_blocks(d, [&](int j, int left) {
    const __m256 c = keep(_mm256_sub_ps(load(x + j, left), mean), left);
    return _mm256_mul_ps(c, c);
  });
  // biased variance, eps inside the root
  const __m256 inv_std = _mm256_set1_ps(1.0f / std::sqrt(sum8(sq) / float(d) + eps));
  for (int j = 0; j < d; j += 8) {
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load(x + j, d - j), mean), inv_std);
    store(y + j, _mm256_fmadd_ps(xhat, load(gamma + j, d - j), load(beta + j, d - j)), d - j);
  }
}

// GELU(v) = v·Φ(v), Φ(v) = ½·erfc(−v/√2). With z = |v|/√2: Φ(v) = ½·erfc(z) for v < 0 and
// 1 − ½·erfc(z) for v ≥ 0, so the small tail of Φ at negative v keeps its relative accuracy (no
// 1 + erf(·) near 0). erfc(z) = t·exp(−z² − 1.26551223 + t·P(t)), t = 1/(1 + z/2), P of degree 8:
// the Chebyshev fit in Press et al., Numerical Recipes, §6.2 (erfcc), fractional error below
// 1.2·10⁻⁷ for every z ≥ 0 (erfc_exponent, simd_math.h).
void gelu(float* x, size_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  for (size_t j = 0; j < n; j += 8) {
    const int left = n - j >= 8 ? 8 : int(n - j);
    const __m256 v = load(x + j, left);
    const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(0.70710678118654752f));
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(z, half, one));
    const __m256 tail = _mm256_mul_ps(half, _mm256_mul_ps(t, exp8(simd::erfc_exponent(z, t))));  // ½·erfc(z)
    const __m256 phi = _mm256_blendv_ps(_mm256_sub_ps(one, tail), tail, v);  // v's sign bit picks the tail
    store(x + j, _mm256_mul_ps(v, phi), left);
  }
}

// GELUTanh(v) = ½v·(1 + tanh(u)) = v / (1 + e^(−2u)),  u = √(2/π)·(v + 0.044715·v³)
// (1 + tanh u = 2 / (1 + e^(−2u))); at large negative u, e^(−2u) is large or infinite and the
// result goes to −0 without the cancellation of 1 + tanh u.
void gelu_tanh(float* x, size_t n) {
  const __m256 c = _mm256_set1_ps(-2.0f * 0.79788456080286536f), a = _mm256_set1_ps(0.044715f);
  for (size_t j = 0; j < n; j += 8) {
    const int left = n - j >= 8 ? 8 : int(n - j);
    const __m256 v = load(x + j, left);
    const __m256 minus_2u = _mm256_mul_ps(c, _mm256_fmadd_ps(_mm256_mul_ps(a, v), _mm256_mul_ps(v, v), v));
    store(x + j, _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(minus_2u))), left);
  }
}

}  // namespace ordo::avx2

namespace ordo {
const RowKernels kRowsAvx2 = {avx2::softmax_row, avx2::layer_norm_row, avx2::gelu, avx2::gelu_tanh};
}  // namespace ordo
