// ordo: the row-wise kernels behind softmax_rows, layer_norm, the residual adds and the GELU
// activations (engine/ops.h). AVX-512 bodies (rows_avx512.cpp) where the kernels run at AVX-512
// (engine/kernels/cpu.h), AVX2 and FMA ones (rows_avx2.cpp) at AVX2; otherwise plain loops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "engine/kernels/parallel.h"

namespace ordo {

// softmax over the first `valid` floats of one row, in place; valid ≥ 1. A score more than
// −softmax_floor(valid) below the row's maximum gets weight 0 (below).
void softmax_row(float* row, int valid);

// The least x = z − max whose weight e^x / Σ is kept, at every level: −87 + ln(valid). A kept weight
// is then at least e^−87 · valid / Σ ≥ e^−87 ≈ 1.4 · 2^−126 (Σ ≤ valid), a normal float, and one
// set to 0 was under e^−87 · valid, 10^−34 at 8,192 keys. No subnormal float is made: on Intel
// cores each one costs a microcode assist, and rows of 512 scores spread over ±100 (8% of the
// weights subnormal) took 7.9–9.2 ns a score at AVX-512 and 3.4–3.8 at AVX2, 0.6–0.7 with the floor
// (docs/performance.md).
inline float softmax_floor(int valid) {
  return -87.0f + std::log(float(valid));
}

// y = LayerNorm(x + r) for one row of d (r may be null: y = LayerNorm(x)); y may equal x.
void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps);

// GELU (the erf form) and GELUTanh (engine/ops.h has both equations) over n values, in place.
void gelu(float* x, size_t n);
void gelu_tanh(float* x, size_t n);

// One instruction set's row kernels, each doing what the function of its name above does: kRowsAvx512
// (rows_avx512.cpp) and kRowsAvx2 (rows_avx2.cpp, AVX2 and FMA). The functions above take the table of
// the level the kernels run at (engine/kernels/cpu.h), and their own plain loops below AVX2. A build
// without the SIMD files has the tables empty (no_simd.cpp), never chosen.
struct RowKernels {
  void (*softmax_row)(float* row, int valid);
  void (*layer_norm_row)(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d,
                         float eps);
  void (*gelu)(float* x, size_t n);
  void (*gelu_tanh)(float* x, size_t n);
};
extern const RowKernels kRowsAvx512, kRowsAvx2;

// Rows per task when a row-wise step (LayerNorm, residual add) is spread over the threads: a
// block of 32 rows of d = 512 is 64 KB, enough work to pay for handing it out, and a pass over
// 32 rows or fewer runs on the calling thread alone.
constexpr int kRowsPerBlock = 32;

// Runs rows(m0, m1) over [0, M) in blocks of kRowsPerBlock rows, spread over the threads.
template <typename Rows>
void for_row_blocks(int M, Rows rows) {
  const int blocks = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  parallel_for(blocks, [&](int block, int) { rows(block * kRowsPerBlock, std::min(M, (block + 1) * kRowsPerBlock)); });
}

}  // namespace ordo
