#include "engine/kernels/rows.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/cpu.h"

namespace ordo {

namespace {
bool at_avx512() {
  static const bool yes = isa_at_least(Isa::Avx512);
  return yes;
}
}  // namespace

// Without AVX-512: the same steps one float at a time; LayerNorm's sums in double.

void softmax_row(float* row, int valid) {
  if (at_avx512()) return avx512::softmax_row(row, valid);
  const float max = *std::max_element(row, row + valid);  // exp(z − max) ≤ 1: no overflow
  float sum = 0.0f;
  for (int j = 0; j < valid; ++j) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  const float inv = 1.0f / sum;  // sum ≥ 1: the max term contributes exp(0)
  for (int j = 0; j < valid; ++j) row[j] *= inv;
}

void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps) {
  if (at_avx512()) return avx512::layer_norm_row(y, x, r, gamma, beta, d, eps);
  if (r) {
    for (int j = 0; j < d; ++j) y[j] = x[j] + r[j];
    x = y;
  }
  double sum = 0.0;
  for (int j = 0; j < d; ++j) sum += x[j];
  const double mean = sum / d;
  double sq = 0.0;
  for (int j = 0; j < d; ++j) sq += (x[j] - mean) * (x[j] - mean);
  const double inv_std = 1.0 / std::sqrt(sq / d + eps);  // biased variance, eps inside the root
  for (int j = 0; j < d; ++j) y[j] = static_cast<float>((x[j] - mean) * inv_std) * gamma[j] + beta[j];
}

}  // namespace ordo
