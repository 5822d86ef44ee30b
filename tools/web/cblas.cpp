// cblas_sgemm for the WebAssembly build: C = alpha·op(A)·op(B) + beta·C, row-major, op(X) = X or Xᵀ.
// With B not transposed the inner loop runs along a row of B and C (an axpy), which the compiler turns
// into WebAssembly SIMD (-msimd128) by itself. With B transposed each output is a dot product of two
// rows: four partial sums, one per SIMD lane (k mod 4), added at the end; the order of a sum differs
// from OpenBLAS's as theirs differs between machines (the tests allow 1e-5).
#include "cblas.h"

#include <vector>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace {

// Σ_k x[k]·y[k]
float dot(const float* x, const float* y, int K) {
  int k = 0;
  float sum = 0.0f;
#ifdef __wasm_simd128__
  v128_t acc = wasm_f32x4_splat(0.0f);
  for (; k + 4 <= K; k += 4) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load(x + k), wasm_v128_load(y + k)));
  sum = (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1)) +
        (wasm_f32x4_extract_lane(acc, 2) + wasm_f32x4_extract_lane(acc, 3));
#endif
  for (; k < K; ++k) sum += x[k] * y[k];
  return sum;
}

}  // namespace

extern "C" void cblas_sgemm(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                            float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
                            int ldc) {
  // The engine calls it row-major only (CblasRowMajor).
  auto a = [&](int i, int k) { return ta == CblasNoTrans ? A[i * lda + k] : A[k * lda + i]; };
  if (tb == CblasNoTrans) {
    std::vector<float> row(size_t(N > 0 ? N : 0));
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) row[j] = 0.0f;
      for (int k = 0; k < K; ++k) {
        const float aik = a(i, k);
        const float* b = B + size_t(k) * ldb;
        for (int j = 0; j < N; ++j) row[j] += aik * b[j];
      }
      float* c = C + size_t(i) * ldc;
      for (int j = 0; j < N; ++j) c[j] = alpha * row[j] + (beta == 0.0f ? 0.0f : beta * c[j]);
    }
    return;
  }
  for (int i = 0; i < M; ++i) {
    float* c = C + size_t(i) * ldc;
    for (int j = 0; j < N; ++j) {
      const float* b = B + size_t(j) * ldb;
      float sum = 0.0f;
      if (ta == CblasNoTrans) {
        sum = dot(A + size_t(i) * lda, b, K);
      } else {
        for (int k = 0; k < K; ++k) sum += a(i, k) * b[k];
      }
      c[j] = alpha * sum + (beta == 0.0f ? 0.0f : beta * c[j]);
    }
  }
}

extern "C" void openblas_set_num_threads(int) {}
extern "C" int openblas_get_num_threads(void) {
  return 1;
}
