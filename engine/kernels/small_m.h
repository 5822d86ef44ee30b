// ordo: y = x·Wᵀ + b for a few rows of x (engine/kernels/small_m.cpp).
#pragma once

namespace ordo {

// Whether the kernels run at AVX2 or above (engine/kernels/cpu.h); below, scalar dot products would
// be slower than sgemm at any M, and the engine uses sgemm.
bool have_simd_dot();

// Register-blocked dot products reading each row of W (N, K) once for all M rows of x (M, K),
// vectorised along K (AVX-512, else AVX2; else a plain loop on one thread), the threads splitting the
// columns of y.
void linear_small_m(float* y /* (M, N) */, const float* x, const float* w, const float* b, int M, int K, int N);
namespace avx2 {
void linear_small_m(float* y, const float* x, const float* w, const float* b, int M, int K, int N);
}
namespace avx512 {
void linear_small_m(float* y, const float* x, const float* w, const float* b, int M, int K, int N);
}

}  // namespace ordo
