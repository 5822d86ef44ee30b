// ordo: the x86 SIMD intrinsics, and one register of floats as wide as the machine has, for the
// kernels that are written once against a few vector operations (the small-M kernel, the row
// kernels' polynomials in simd_math.h, the GEMM's micro-kernel in gemm_tile.h).
#pragma once

#if defined(__AVX2__) || defined(__AVX512F__)
// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_ps (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

// The names live in a namespace of the instruction set the file is compiled for (simd_avx512,
// simd_avx2, simd_scalar), reached as ordo::simd: files compiled with different flags
// (engine/CMakeLists.txt) then never share an inline function of a different width.
#if defined(__AVX512F__)
#define ORDO_SIMD_NS simd_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define ORDO_SIMD_NS simd_avx2
#else
#define ORDO_SIMD_NS simd_scalar
#endif

namespace ordo {
namespace ORDO_SIMD_NS {

// Vec: kLanes floats; vzero, vload, vload_first (the first n lanes, the rest 0), vfma (a·b + c)
// and vsum (the sum of the lanes). AVX-512, else AVX2 with FMA, else one scalar.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
#define ORDO_MM(op) _mm512_##op  // the intrinsic of this width: ORDO_MM(fmadd_ps) is _mm512_fmadd_ps
inline Vec vload_first(const float* p, int n) {
  return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p);
}
inline float vsum(Vec a) {
  return _mm512_reduce_add_ps(a);
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
#define ORDO_MM(op) _mm256_##op
inline Vec vload_first(const float* p, int n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
}
inline float vsum(Vec a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#else
using Vec = float;
constexpr int kLanes = 1;
inline Vec vzero() {
  return 0.0f;
}
inline Vec vload(const float* p) {
  return *p;
}
inline Vec vload_first(const float* p, int) {
  return *p;
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  return a * b + c;
}
inline float vsum(Vec a) {
  return a;
}
#endif

#ifdef ORDO_MM
// Zero, load and fused multiply-add are one instruction at either width, named alike but for the
// prefix (_mm512_ or _mm256_); the masked load and the sum of the lanes differ, above. At these
// two widths only (for simd_math.h and gemm_tile.h): vstore, vset (every lane c), vadd, vmul and
// vfnma (c − a·b, fused).
inline Vec vzero() {
  return ORDO_MM(setzero_ps)();
}
inline Vec vload(const float* p) {
  return ORDO_MM(loadu_ps)(p);
}
inline void vstore(float* p, Vec v) {
  ORDO_MM(storeu_ps)(p, v);
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  return ORDO_MM(fmadd_ps)(a, b, c);
}
inline Vec vset(float c) {
  return ORDO_MM(set1_ps)(c);
}
inline Vec vadd(Vec a, Vec b) {
  return ORDO_MM(add_ps)(a, b);
}
inline Vec vmul(Vec a, Vec b) {
  return ORDO_MM(mul_ps)(a, b);
}
inline Vec vfnma(Vec a, Vec b, Vec c) {
  return ORDO_MM(fnmadd_ps)(a, b, c);
}
#undef ORDO_MM
#endif

}  // namespace ORDO_SIMD_NS
namespace simd = ORDO_SIMD_NS;
}  // namespace ordo
