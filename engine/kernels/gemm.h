// ordo's own packed single-precision GEMM for AVX-512 (engine/kernels/gemm_avx512.cpp) and for AVX2
// with FMA (gemm_avx2.cpp); gemm.cpp chooses one at run time, and has the plain loops. It exists so
// that the weight products run at the machine's FMA rate whichever kernels OpenBLAS picked (an
// environment may force OpenBLAS onto AVX2, half the peak; docs/performance.md).
#pragma once

#include <cstddef>

namespace ordo {

// Whether the kernels run at AVX2 or above (engine/kernels/cpu.h): the functions below are then
// the AVX-512 or the AVX2 ones, else plain loops that the engine does not use for its products
// (OpenBLAS does).
bool have_gemm();
// Whether linear_stream is a kernel of its own (AVX-512 and AVX2; below, a plain loop).
bool have_stream();

// Per-thread float scratch, `slot` 0 or 1, grown to at least `floats` and kept for the thread's life.
float* thread_scratch(int slot, size_t floats);

// C (M, N) = α · A (M, K) · op(B) + bias, row by row; op(B) = Bᵀ with B (N, K) when b_is_nk (a weight
// in PyTorch's layout, or the keys in q·kᵀ), else B (K, N). lda, ldb, ldc are row strides.
// bias (N) or null. One thread; below AVX2 it is a plain triple loop.
void gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, bool b_is_nk, const float* bias,
          float alpha, int M, int N, int K);

// B̂ packed once for several products with different A (a head's keys and values, met by every
// block of its query rows): packed_b_floats(N, K) floats, filled by pack_b_all, read by
// gemm_packed, which is gemm() without its packing.
size_t packed_b_floats(int N, int K);
void pack_b_all(float* Bp, const float* B, int ldb, bool b_is_nk, int N, int K);
void gemm_packed(float* C, int ldc, const float* A, int lda, const float* Bp, float alpha, int M, int N, int K);

// y (M, N) = x (M, K) · Wᵀ (K, N) + b, W (N, K): gemm() on column blocks of y shared by the engine's
// threads, each packing only its own rows of W.
void linear_gemm(float* y, const float* x, const float* w, const float* b, int M, int K, int N);

// The same product for a few dozen rows of x: the weights are read once, in place, as the
// broadcast operand, and x is the packed one; nothing of W is copied.
void linear_stream(float* y, const float* x, const float* w, const float* b, int M, int K, int N);

// The same product on a weight packed once, when the model is (the engine does so where
// prepack_weights() says, engine/kernels/cpu.h): panels of prepacked_width() columns of y, k-major
// (gemm_blocks.h), read front to back as the vector operand while x is broadcast. Each sum runs over
// k in order with one FMA a step, so it gives the bits linear_stream gives. prepacked_floats(N, K)
// floats, filled by prepack from W (N, K); at AVX2 and AVX-512 only (below, prepacked_width() is 0).
// The engine runs it up to kPrepackedRows rows of x; above, linear_gemm, whose blocks keep a block of
// x in cache across 256 columns of y where this kernel reads all of x again for every 48 (at 2048
// rows it took 1.04–1.06 of linear_gemm's time, docs/performance.md).
constexpr int kPrepackedRows = 512;
int prepacked_width();
size_t prepacked_floats(int N, int K);
void prepack(float* wp, const float* w, int N, int K);
void linear_prepacked(float* y, const float* x, const float* wp, const float* b, int M, int K, int N);

// One instruction set's bodies of the functions above: gemm_avx512.cpp's and gemm_avx2.cpp's tables
// (gemm_blocks.h builds both from their tiles); gemm.cpp calls the one the CPU allows.
struct GemmKernels {
  decltype(&ordo::gemm) gemm;
  decltype(&ordo::packed_b_floats) packed_b_floats;
  decltype(&ordo::pack_b_all) pack_b_all;
  decltype(&ordo::gemm_packed) gemm_packed;
  decltype(&ordo::linear_gemm) linear_gemm;
  decltype(&ordo::linear_stream) linear_stream;
  int prepacked_width;
  decltype(&ordo::prepacked_floats) prepacked_floats;
  decltype(&ordo::prepack) prepack;
  decltype(&ordo::linear_prepacked) linear_prepacked;
};
extern const GemmKernels kGemmAvx512, kGemmAvx2;

}  // namespace ordo
