// ordo: the products that go to OpenBLAS (engine/kernels/blas.cpp).
#pragma once

namespace ordo {

// OpenBLAS as the engine uses it: one thread inside each call, the engine's threads splitting the
// work. Runs once; every kernel that calls cblas_sgemm calls it first.
void blas_setup();

// Before `threads` threads call cblas_sgemm: under an address-space or data limit (ulimit -v),
// std::bad_alloc unless there is room for OpenBLAS's work buffer on each thread that has not had
// one yet (OpenBLAS retries a failed one for ever). Without a limit, nothing.
void blas_check_room(int threads);

// y (M, N) = x (M, K) · Wᵀ + b with cblas_sgemm, the threads splitting the columns of y.
void linear_blas(float* y, const float* x, const float* w, const float* b, int M, int K, int N);

}  // namespace ordo
