// ordo: acc = xq·Wqᵀ in int8, exact in int32, on AVX-512 VNNI's vpdpbusd (engine/kernels/int8_vnni.cpp),
// ordo's own kernel for --compute-type int8 beside oneDNN's matmul (engine/kernels/reduced.cpp).
//
// vpdpbusd multiplies unsigned bytes by signed bytes: in each 32-bit lane j,
//   acc[j] += Σ_{i<4} a_u8[4j + i] · b_s8[4j + i]
// so the activations, s8 in [−127, 127], go in as u8 = s8 + 128 (in [1, 255]) and the surplus is
// taken off at the end with the column sums of W computed once at conversion:
//   Σ_k x_s8[k]·w[n][k] = Σ_k (x_s8[k] + 128)·w[n][k] − 128·Σ_k w[n][k]
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/tiles.h"

namespace ordo {

// Whether the kernels run at AVX-512 on a CPU with VNNI (engine/kernels/cpu.h): the kernel in
// int8_vnni_avx512.cpp. Elsewhere reduced.cpp uses reduced_avx2.h or a plain loop.
bool have_int8_vnni();

// W (N, K) s8 in the order the kernel reads it (tiles::pack<4>): panels of 16 output columns, each
// panel KG/4 groups of 64 bytes, a group holding 4 consecutive k for each of the 16 columns,
//   w[p][g][c][i] = W[16p + c][4g + i]   (0 past N or K; KG = K4, K rounded up to a multiple of 4),
// so one 64-byte load is the operand of one vpdpbusd for 16 columns × 4 k.
struct PackedInt8 : tiles::Panels<4, int8_t> {
  std::vector<int32_t> compensation;  // (⌈N/16⌉·16): 128·Σ_k W[n][k], 0 past N
};
PackedInt8 pack_int8(const int8_t* w /* (N, K) */, int N, int K);

// x's quantized rows as the kernel reads them: u8 = s8 + 128 (the sign bit flipped), each row
// padded to K4 bytes (the pad meets zero weights).
void to_u8_rows(uint8_t* xu /* (M, K4) */, const int8_t* xq /* (M, K) */, int M, int K, int K4);

// quantize_rows (engine/kernels/reduced.h) and to_u8_rows in one pass, 16 values a step in AVX-512:
// the same scales and the same integers (reduced.h, quantize_rows16_plain, says how).
void quantize_rows_u8(uint8_t* xu /* (M, K4) */, float* s /* (M) */, const float* x /* (M, K) */, int M, int K, int K4);

// acc[m][n] = Σ_k xq[m][k]·W[n][k], exact: |acc| ≤ 127²·K fits int32 for K < 133,000, and the u8
// sums that may pass 2^31 on the way wrap and unwrap (two's complement) when the compensation is
// taken off. The threads split the columns (and the rows, in blocks, when there are many).
void int8_vnni_products(int32_t* acc /* (M, N) */, const uint8_t* xu /* (M, K4) */, const PackedInt8& w, int M,
                        int threads);
// y[m][n] = acc[m][n]·(xs[m]·ws[n]) + b[n], the scaling done on each tile as it leaves the registers;
// y's rows ld apart (ld ≥ N: the product may be the first columns of a wider output).
void int8_vnni_linear(float* y /* (M, ld) */, const uint8_t* xu /* (M, K4) */, const float* xs /* (M) */,
                      const PackedInt8& w, const float* ws /* (N) */, const float* b /* (N) or null */, int M, int ld,
                      int threads);
// The finer grids' product (reduced.h) on vpdpwssd, int16 · int16 pairs summed into int32, half
// vpdpbusd's k per instruction: x (M, K2) int16 rows padded to K2 (K rounded up to 2) with 0, W
// int16 in tiles::pack_panels<2> order (one 64-byte load: 16 columns × 2 k). acc (M, ld) exact
// (|x|·|W|·K within int32 is the caller's), or, acc null, y (M, ld) = acc·(xs[m]·ws[n]) + b[n].
void int16_vnni(int32_t* acc, float* y, const int16_t* x, const float* xs, const int16_t* w, const float* ws,
                const float* b, int M, int N, int K2, int ld, int threads);

// One row of quantize_rows_u8, plainly (quantize_rows, then to_u8_rows), and of quantize_rows16.
void quantize_row_u8_plain(uint8_t* xu /* (K4) */, float* s, const float* x /* (K) */, int K, int K4);
void quantize_row16_plain(int16_t* q /* (ld) */, float* s, const float* x /* (K) */, int K, int ld, int top);

// The AVX-512 bodies of the four above, and of reduced.h's quantize_rows16 (any AVX-512 CPU).
namespace avx512 {
void quantize_rows_u8(uint8_t* xu, float* s, const float* x, int M, int K, int K4);
void quantize_rows16(int16_t* q, float* s, const float* x, int M, int K, int ld, int top);
void int8_vnni_products(int32_t* acc, const uint8_t* xu, const PackedInt8& w, int M, int threads);
void int8_vnni_linear(float* y, const uint8_t* xu, const float* xs, const PackedInt8& w, const float* ws,
                      const float* b, int M, int ld, int threads);
void int16_vnni(int32_t* acc, float* y, const int16_t* x, const float* xs, const int16_t* w, const float* ws,
                const float* b, int M, int N, int K2, int ld, int threads);
}  // namespace avx512

}  // namespace ordo
