// The two cblas calls the engine makes, for the WebAssembly build (tools/web), which has no OpenBLAS:
// the product as its definition, row-major only. C = alpha·op(A)·op(B) + beta·C, op(X) = X or Xᵀ.
#pragma once

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

#ifdef __cplusplus
extern "C" {
#endif
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);  // 1: the page runs one thread
#ifdef __cplusplus
}
#endif
