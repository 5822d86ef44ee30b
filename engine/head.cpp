#include <algorithm>
#include <cmath>
#include <vector>

#include <ordo/engine/head.h>

#include "engine/kernels/blas.h"
#include "engine/kernels/parallel.h"
#include "engine/ops.h"

namespace ordo {

void mlm_logits(float* out, const float* h, int R, const Model& m) {
  const Config& c = m.config();
  const Weights& w = m.weights();
  if (R <= 0) return;
  const PassThreads pass;  // the helpers stay awake for this product's job
  std::vector<float> u;
  if (c.head_transform) {  // u = LayerNorm(act(h·W_hᵀ + b_h))
    u.resize(size_t(R) * c.d_model);
    linear_blas(u.data(), h, w.head_dense_weight, w.head_dense_bias, R, c.d_model, c.d_model);
    activation(u.data(), u.size(), c.head_activation);
    layer_norm(u.data(), u.data(), w.head_norm_weight, w.head_norm_bias, R, c.d_model, float(c.layer_norm_eps));
    h = u.data();
  }
  // y = x·Dᵀ + b with D = E (V, d) or the head's own decoder: the Linear of ops.h, through cblas_sgemm
  // (the threads split the V columns).
  linear_blas(out, h, w.head_decoder, w.head_bias, R, c.d_model, c.vocab_size);
}

double log_sum_exp(const float* z, int n) {
  if (n <= 0) return -INFINITY;
  const double top = *std::max_element(z, z + n);
  double sum = 0.0;
  for (int v = 0; v < n; ++v) sum += std::exp(double(z[v]) - top);
  return top + std::log(sum);
}

}  // namespace ordo
