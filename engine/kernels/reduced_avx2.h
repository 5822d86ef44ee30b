// ordo: --compute-type int8 and bf16 on CPUs with AVX2 and FMA but without AVX-512's dot-product
// instructions (engine/kernels/reduced_avx2.cpp, compiled for AVX2 and FMA alone and run only
// where engine/kernels/cpu.h finds them). The tiles of int8_vnni.h, 8 float or int32 lanes wide.
//
// int8. AVX2's byte product, vpmaddubsw, multiplies u8 by s8 and adds each pair into a 16-bit lane
// that saturates: with the activations as u8 = s8 + 128 (up to 255) and weights up to 127, a pair
// reaches 2·255·127 = 64,770 > 32,767 and is cut off. oneDNN's int8 takes that path on CPUs without
// VNNI, and on the default model it took the mean-pooled cosine to f32 below 0.999 on most lines.
// Here the bytes are widened to 16 bits first and multiplied with vpmaddwd, which sums each pair
// of 16-bit products into a 32-bit lane: exact, as vpdpbusd is, with the same integers as the
// plain twin, at half vpdpbusd's products per instruction:
//   acc[c] += x[2g]·W[c][2g] + x[2g + 1]·W[c][2g + 1]     (lane c: output column c; |pair| ≤ 2·127²)
// Keeping the activations within 7 bits (|q| ≤ 63, so that no pair can saturate) would have kept
// vpmaddubsw's rate, at twice the activations' rounding error: the error this compute type is
// judged by (docs/precision.md).
//
// bf16. No bf16 arithmetic without AVX-512 BF16: W is kept in bf16 (half the bytes of float) and
// widened to float in the registers (a bf16 is a float's top 16 bits: shift left by 16), x is
// rounded to bf16 and kept as floats, and the products are summed with FMA. A product of two bf16
// is exact in float, so each step rounds once, as vdpbf16ps's sums do.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ordo {
void quantize_row16_plain(int16_t* q, float* s, const float* x, int K, int ld, int top);  // int8_vnni.h
}

namespace ordo::avx2 {

// reduced.h's quantize_rows16, 8 values a step in float where that gives the same integers, else 4
// in double (the plain one's division, without dividing).
void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int ld, int top);

// acc (M, N) = xw · Wᵀ, exact in int32, or (acc null) y (M, N) = acc·(xs[m]·ws[n]) + b[n]; the
// rows of acc and y ld apart. xw: x's quantized rows in int16, each padded to K2 (K rounded up to
// 2) with 0. w: W's int8 in tiles::pack_panels<2> order (panels of 16 columns, pairs of k). b may be
// null. int16_products: the same with W's int16 (the finer grids of reduced.h), not widened, so
// one step costs what int8's does (|x|·|W|·K within int32 is the caller's: reduced.h).
void int8_products(int32_t* acc, float* y, const int16_t* xw, const float* xs, const int8_t* w, const float* ws,
                   const float* b, int M, int N, int K2, int ld, int threads);
void int16_products(int32_t* acc, float* y, const int16_t* xw, const float* xs, const int16_t* w, const float* ws,
                    const float* b, int M, int N, int K2, int ld, int threads);

// y (M, N) = xr · Wᵀ + b: xr x's rows rounded to bf16 (as floats, (M, K)); w W's bf16 in
// tiles::pack_panels<1> order (panels of 16 columns, one k after another). b may be null.
void bf16_linear(float* y, const float* xr, const uint16_t* w, const float* b, int M, int N, int K, int threads);

}  // namespace ordo::avx2
