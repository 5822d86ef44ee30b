#include "engine/kernels/blas.h"

#include <cblas.h>

#include <algorithm>

#include "engine/kernels/parallel.h"

namespace ordo {

void blas_setup() {
  // The engine's own threads share the work, so OpenBLAS must not start threads inside them.
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

// The threads take column blocks of y (row blocks of W), so each packs only its part of W.
void linear_blas(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  blas_setup();
  // Two blocks per thread, handed out as threads come free: a thread the OS pauses holds up one
  // block, not half the product. Each block packs x again, so blocks stay ≥ 128 columns.
  const int parts = std::min(2 * kernel_threads(), std::max(1, N / 128));
  const int cols = (N + parts - 1) / parts;
  parallel_for(parts, [&](int part, int) {
    const int n0 = part * cols, n = std::min(N, n0 + cols) - n0;
    if (n <= 0) return;
    if (b)
      for (int m = 0; m < M; ++m) std::copy(b + n0, b + n0 + n, y + size_t(m) * N + n0);
    // y[:, n0:n0+n] (M, n) = x (M, K) · W[n0:n0+n]ᵀ (K, n) + β·y, with β = 1 when y already holds the bias.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, K, 1.0f, x, K, w + size_t(n0) * K, K, b ? 1.0f : 0.0f,
                y + n0, N);
  });
}

}  // namespace ordo
