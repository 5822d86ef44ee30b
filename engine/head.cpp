#include <algorithm>
#include <cmath>

#include <ordo/engine/head.h>

#include "engine/kernels/blas.h"
#include "engine/kernels/parallel.h"

namespace ordo {

void mlm_logits(float* out, const float* h, int R, const Model& m) {
  const Config& c = m.config();
  const PassThreads pass;  // the helpers stay awake for this product's job
  // y = x·Wᵀ + b with W = E (V, d): the Linear of ops.h, through cblas_sgemm (the threads split the V columns).
  linear_blas(out, h, m.weights().embedding, m.weights().head_bias, R, c.d_model, c.vocab_size);
}

double log_sum_exp(const float* z, int n) {
  if (n <= 0) return -INFINITY;
  const double top = *std::max_element(z, z + n);
  double sum = 0.0;
  for (int v = 0; v < n; ++v) sum += std::exp(double(z[v]) - top);
  return top + std::log(sum);
}

}  // namespace ordo
