// ordo's own packed single-precision GEMM for AVX-512 (engine/kernels/gemm.cpp). It exists so that the
// weight products run at the machine's FMA rate whichever kernels OpenBLAS picked (an
// environment may force OpenBLAS onto AVX2, half the peak; docs/performance.md).
#pragma once

namespace ordo {

#if defined(__AVX512F__)
constexpr bool kHaveGemm = true;
#else
constexpr bool kHaveGemm = false;
#endif

// C (M, N) = α · A (M, K) · op(B) + bias, row by row; op(B) = Bᵀ with B (N, K) when b_is_nk (a weight
// in PyTorch's layout, or the keys in q·kᵀ), else B (K, N). lda, ldb, ldc are row strides.
// bias (N) or null. One thread; without AVX-512 it is a plain triple loop (never used by the engine).
void gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, bool b_is_nk, const float* bias,
          float alpha, int M, int N, int K);

// y (M, N) = x (M, K) · Wᵀ (K, N) + b, W (N, K): gemm() on column blocks of y shared by the engine's
// threads, each packing only its own rows of W.
void linear_gemm(float* y, const float* x, const float* w, const float* b, int M, int K, int N);

// The same product for a few dozen rows of x: the weights are read once, in place, as the
// broadcast operand, and x is the packed one; nothing of W is copied.
void linear_stream(float* y, const float* x, const float* w, const float* b, int M, int K, int N);

}  // namespace ordo
