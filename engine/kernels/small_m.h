// ordo: y = x·Wᵀ + b for a few rows of x (engine/kernels/small_m.cpp).
#pragma once

namespace ordo {

#if defined(__AVX2__) || defined(__AVX512F__)
constexpr bool kHaveSimdDot = true;
#else
constexpr bool kHaveSimdDot = false;  // scalar dot products are slower than sgemm at any M
#endif

// Register-blocked dot products reading each row of W (N, K) once for all M rows of x (M, K),
// vectorised along K (AVX-512, else AVX2, else scalar), the threads splitting the columns of y.
void linear_small_m(float* y /* (M, N) */, const float* x, const float* w, const float* b, int M, int K, int N);

}  // namespace ordo
