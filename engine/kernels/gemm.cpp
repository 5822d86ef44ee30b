#include "engine/kernels/gemm.h"

#include <algorithm>
#include <vector>

#include "engine/kernels/cpu.h"

namespace ordo {

namespace {
Isa level() {
  static const Isa l = isa_level();
  return l;
}
}  // namespace

bool have_gemm() {
  return level() != Isa::Scalar;
}

bool have_stream() {
  return level() == Isa::Avx512;
}

float* thread_scratch(int slot, size_t floats) {
  thread_local std::vector<float> scratch[2];
  std::vector<float>& s = scratch[slot];
  if (s.size() < floats) s.resize(floats);
  return s.data();
}

// Below AVX2: the plain loops (the engine sends these products to OpenBLAS instead; the tests
// call them).

void gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, bool b_is_nk, const float* bias,
          float alpha, int M, int N, int K) {
  if (level() == Isa::Avx512) return avx512::gemm(C, ldc, A, lda, B, ldb, b_is_nk, bias, alpha, M, N, K);
  if (level() == Isa::Avx2) return avx2::gemm(C, ldc, A, lda, B, ldb, b_is_nk, bias, alpha, M, N, K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += A[size_t(i) * lda + k] * (b_is_nk ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j]);
      C[size_t(i) * ldc + j] = alpha * acc + (bias ? bias[j] : 0.0f);
    }
}

// Below AVX2 the "packed" B̂ is B̂ itself, (K, N) row-major.
size_t packed_b_floats(int N, int K) {
  if (level() == Isa::Avx512) return avx512::packed_b_floats(N, K);
  if (level() == Isa::Avx2) return avx2::packed_b_floats(N, K);
  return size_t(std::max(N, 0)) * size_t(std::max(K, 0));
}

void pack_b_all(float* Bp, const float* B, int ldb, bool b_is_nk, int N, int K) {
  if (level() == Isa::Avx512) return avx512::pack_b_all(Bp, B, ldb, b_is_nk, N, K);
  if (level() == Isa::Avx2) return avx2::pack_b_all(Bp, B, ldb, b_is_nk, N, K);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) Bp[size_t(k) * N + j] = b_is_nk ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
}

void gemm_packed(float* C, int ldc, const float* A, int lda, const float* Bp, float alpha, int M, int N, int K) {
  if (level() == Isa::Avx512) return avx512::gemm_packed(C, ldc, A, lda, Bp, alpha, M, N, K);
  if (level() == Isa::Avx2) return avx2::gemm_packed(C, ldc, A, lda, Bp, alpha, M, N, K);
  if (K <= 0) return;
  gemm(C, ldc, A, lda, Bp, N, false, nullptr, alpha, M, N, K);
}

void linear_gemm(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (level() == Isa::Avx512) return avx512::linear_gemm(y, x, w, b, M, K, N);
  if (level() == Isa::Avx2) return avx2::linear_gemm(y, x, w, b, M, K, N);
  gemm(y, N, x, K, w, K, true, b, 1.0f, M, N, K);
}

void linear_stream(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (level() == Isa::Avx512) return avx512::linear_stream(y, x, w, b, M, K, N);
  if (level() == Isa::Avx2) return avx2::linear_gemm(y, x, w, b, M, K, N);
  gemm(y, N, x, K, w, K, true, b, 1.0f, M, N, K);
}

}  // namespace ordo
