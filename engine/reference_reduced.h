// ordo: the plain twins of the reduced-precision products, beside the plain encoder
// (engine/reference.h), as a quantized runner sits beside its float one. forward() does not call them:
// the fast encoder's int8 and bf16 products (engine/kernels/reduced.h) are held to them by
// tests/engine/test_reduced.cpp, and docs/precision.md says what each changes.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ordo::reference {

// The same product at reduced precision (--compute-type; the fast one is engine/kernels/reduced.h).
// Float inputs, as the fast encoder hands them to its products.
//
// int8, symmetric, per row: s = max_k |v_k| / 127 (rounded to a float), q_k = round(v_k / s) to
// nearest even, in [−127, 127] (s = 0: all q 0). x is quantized per row (token), W per row (output channel), then
//   acc[m][n] = Σ_k qx[m][k]·qw[n][k]   (exact)      y[m][n] = acc[m][n]·sx[m]·sw[n] + b[n]
//
// The output channels from `wide` on (wide < N: in BERT's terms `value`, `intermediate` and `output` whole; see
// engine/kernels/reduced.h) take finer grids, in 16-bit integers: W per channel with 511 steps
// each side (10 bits), x per row with wide_x_top(K) (12 bits, 2,047, unless K is so large that
// 2,047·511·K would leave int32), so the sums stay exact in int32 as well:
//   s = max_k |v_k| / top,  q_k = round(v_k / s) in [−top, top]
void quantize_rows(int8_t* q /* (M, K) */, float* s /* (M) */, const float* x /* (M, K) */, int M, int K);
void quantize_rows16(int16_t* q /* (M, K) */, float* s /* (M) */, const float* x /* (M, K) */, int M, int K, int top);
constexpr int kWideWTop = 511;
constexpr int wide_x_top(int K) {
  return K <= 0 ? 2047
                : int(std::min<int64_t>(2047, std::max<int64_t>(1, ((int64_t(1) << 31) - 1) / (511 * int64_t(K)))));
}
void linear_int8(double* y /* (M, N) */, int64_t* acc /* (M, N) or null */, const float* x /* (M, K) */,
                 const float* w /* (N, K) */, const float* b /* (N) or null */, int M, int K, int N, int wide = -1);
// bfloat16 keeps 8 significant bits: v rounded to a multiple of 2^(e−7), e = ⌊log2 |v|⌋ (at least
// −126, the smallest normal exponent), ties to even; a value that rounds to 2^128 or more is ±∞.
double round_bf16(float v);
// y = round_bf16(x)·round_bf16(W)ᵀ + b, the products and sums in double.
void linear_bf16(double* y /* (M, N) */, const float* x /* (M, K) */, const float* w /* (N, K) */,
                 const float* b /* (N) or null */, int M, int K, int N);

}  // namespace ordo::reference
