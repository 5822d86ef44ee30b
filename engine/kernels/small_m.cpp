#include "engine/kernels/small_m.h"

#include <cstddef>

#include "engine/kernels/cpu.h"

namespace ordo {

bool have_simd_dot() {
  static const bool yes = isa_at_least(Isa::Avx2);
  return yes;
}

void linear_small_m(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  static const Isa level = isa_level();
  if (level == Isa::Avx512) return avx512::linear_small_m(y, x, w, b, M, K, N);
  if (level == Isa::Avx2) return avx2::linear_small_m(y, x, w, b, M, K, N);
  // the plain loop (the engine uses sgemm instead at this level; the tests call this)
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += x[size_t(m) * K + k] * w[size_t(n) * K + k];
      y[size_t(m) * N + n] = acc + (b ? b[n] : 0.0f);
    }
}

}  // namespace ordo
