#include "engine/kernels/rows.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/cpu.h"

namespace ordo {

namespace {
// The row kernels of the level the kernels run at; null below AVX2.
const RowKernels* fast_rows() {
  const Isa level = isa_level();
  return level == Isa::Avx512 ? &kRowsAvx512 : level == Isa::Avx2 ? &kRowsAvx2 : nullptr;
}
}  // namespace

// Below AVX2: the same steps one float at a time; the softmax's and LayerNorm's sums in double.

void softmax_row(float* row, int valid) {
  if (const RowKernels* k = fast_rows()) return k->softmax_row(row, valid);
  const float max = *std::max_element(row, row + valid);  // exp(z − max) ≤ 1: no overflow
  const float floor = softmax_floor(valid);
  double sum = 0.0;
  for (int j = 0; j < valid; ++j) {
    const float x = row[j] - max;
    row[j] = x >= floor ? std::exp(x) : 0.0f;
    sum += row[j];
  }
  const float inv = float(1.0 / sum);  // sum ≥ 1: the max term contributes exp(0)
  for (int j = 0; j < valid; ++j) row[j] *= inv;
}

void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps) {
  if (const RowKernels* k = fast_rows()) return k->layer_norm_row(y, x, r, gamma, beta, d, eps);
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

// Below AVX2, each value of the GELUs in
// the forms that keep the negative side's small values accurate: ½v·(1 + erf(v/√2)) as
// ½v·erfc(−v/√2), and ½v·(1 + tanh u) as v / (1 + e^(−2u)).

void gelu(float* x, size_t n) {
  if (const RowKernels* k = fast_rows()) return k->gelu(x, n);
  const float inv_sqrt2 = 0.70710678118654752f;
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * std::erfc(-x[i] * inv_sqrt2);
}

void gelu_tanh(float* x, size_t n) {
  if (const RowKernels* k = fast_rows()) return k->gelu_tanh(x, n);
  const float c = 0.79788456080286536f;  // √(2/π)
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i], u = c * (v + 0.044715f * v * v * v);
    x[i] = v / (1.0f + std::exp(-2.0f * u));
  }
}

}  // namespace ordo
