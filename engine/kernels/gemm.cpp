#include "engine/kernels/gemm.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "engine/kernels/cpu.h"

namespace ordo {

bool have_gemm() {
  return isa_level() != Isa::Scalar;
}

bool have_stream() {
  return isa_level() != Isa::Scalar;
}

float* thread_scratch(int slot, size_t floats) {
  thread_local std::vector<float> scratch[2];
  std::vector<float>& s = scratch[slot];
  if (s.size() < floats) s.resize(floats);
  return s.data();
}

// AVX-512's or AVX2's table, or null below AVX2: the plain loops below (the engine sends these products
// to OpenBLAS there; the tests call them).
const GemmKernels* kernels() {
  static const GemmKernels* k = isa_level() == Isa::Avx512 ? &kGemmAvx512
                                : isa_level() == Isa::Avx2 ? &kGemmAvx2
                                                           : nullptr;
  return k;
}

void gemm(float* C, int ldc, const float* A, int lda, const float* B, int ldb, bool b_is_nk, const float* bias,
          float alpha, int M, int N, int K) {
  if (const GemmKernels* k = kernels()) return k->gemm(C, ldc, A, lda, B, ldb, b_is_nk, bias, alpha, M, N, K);
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
  if (const GemmKernels* k = kernels()) return k->packed_b_floats(N, K);
  return size_t(std::max(N, 0)) * size_t(std::max(K, 0));
}

void pack_b_all(float* Bp, const float* B, int ldb, bool b_is_nk, int N, int K) {
  if (const GemmKernels* k = kernels()) return k->pack_b_all(Bp, B, ldb, b_is_nk, N, K);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) Bp[size_t(k) * N + j] = b_is_nk ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
}

void gemm_packed(float* C, int ldc, const float* A, int lda, const float* Bp, float alpha, int M, int N, int K) {
  if (const GemmKernels* k = kernels()) return k->gemm_packed(C, ldc, A, lda, Bp, alpha, M, N, K);
  if (K <= 0) return;
  gemm(C, ldc, A, lda, Bp, N, false, nullptr, alpha, M, N, K);
}

void linear_gemm(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (const GemmKernels* k = kernels()) return k->linear_gemm(y, x, w, b, M, K, N);
  gemm(y, N, x, K, w, K, true, b, 1.0f, M, N, K);
}

// At 16 rows of x or fewer, AVX-512's stream kernel hands over to AVX2's (gemm_avx512.cpp says why).
void linear_stream(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (const GemmKernels* k = kernels()) {
    if (k == &kGemmAvx512 && M <= 16) k = &kGemmAvx2;
    return k->linear_stream(y, x, w, b, M, K, N);
  }
  gemm(y, N, x, K, w, K, true, b, 1.0f, M, N, K);
}

int prepacked_width() {
  const GemmKernels* k = kernels();
  return k ? k->prepacked_width : 0;
}

size_t prepacked_floats(int N, int K) {
  const GemmKernels* k = kernels();
  return k ? k->prepacked_floats(N, K) : 0;
}

void prepack(float* wp, const float* w, int N, int K) {
  if (const GemmKernels* k = kernels()) k->prepack(wp, w, N, K);
}

void linear_prepacked(float* y, const float* x, const float* wp, const float* b, int M, int K, int N) {
  const GemmKernels* k = kernels();
  if (!k) throw std::logic_error("linear_prepacked: no prepacked kernel below AVX2");
  k->linear_prepacked(y, x, wp, b, M, K, N);
}

}  // namespace ordo
