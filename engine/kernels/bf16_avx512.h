// ordo: y = x·Wᵀ + b with x and W in bfloat16, the products summed in float, on AVX-512 BF16's
// vdpbf16ps (engine/kernels/bf16_avx512.cpp): ordo's own kernel for --compute-type bf16 at a few
// rows, beside oneDNN's matmul (engine/kernels/reduced.cpp). The same tiles as int8_vnni.h's,
// with pairs of k where int8 has groups of four:
//   acc[j] += x[2j]·w[2j] + x[2j + 1]·w[2j + 1]   in each of 16 float lanes j
// (the products of two bf16 are exact in float; each sum is rounded to nearest even, subnormal
// inputs and results taken as zero).
#pragma once

#include <cstdint>

#include "engine/kernels/tiles.h"

namespace ordo {

// Whether the kernels run at AVX-512 on a CPU with AVX-512 BF16 (engine/kernels/cpu.h).
bool have_bf16_dot();

// W (N, K) bf16 in panels of 16 output columns, each KG/2 groups of 64 bytes holding 2 consecutive
// k for each of the 16 columns:  w[p][g][c][i] = W[16p + c][2g + i]   (0 past N or K), KG = K2 (K
// rounded up to a multiple of 2). Made by tiles::pack<2>.
using PackedBf16 = tiles::Panels<2, uint16_t>;

// x's rows rounded to bf16 (to_bf16, engine/kernels/reduced.h), each padded to K2 with 0.
void to_bf16_rows(uint16_t* xh /* (M, K2) */, const float* x /* (M, K) */, int M, int K, int K2);

// y = xh·Wᵀ + b on `threads` threads, the columns split between them.
void bf16_dot_linear(float* y /* (M, N) */, const uint16_t* xh /* (M, K2) */, const PackedBf16& w,
                     const float* b /* (N) or null */, int M, int threads);
namespace avx512 {
void bf16_dot_linear(float* y, const uint16_t* xh, const PackedBf16& w, const float* b, int M, int threads);
}

}  // namespace ordo
