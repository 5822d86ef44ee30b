#include "engine/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/kernels/blas.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/rows.h"
#include "engine/kernels/small_m.h"
#include "engine/reference.h"

namespace ordo {

void sinusoidal_positions(float* pe, int S, int d, PeLayout layout, double base, int first_position) {
  std::vector<double> table(size_t(S) * d);  // the formula lives in one place: the reference
  reference::sinusoidal_positions(table.data(), S, d, layout, base, first_position);
  std::transform(table.begin(), table.end(), pe, [](double v) { return static_cast<float>(v); });
}

// The kernel for y = x·Wᵀ + b is chosen by M, the rows of x (measured on the base model from
// 1 × 8 to 4 × 512; the figures are in docs/performance.md):
//   M ≤ kSmallM:  linear_small_m, dot products along K; the weights stream from memory once and
//                 the kernel waits on memory, not on arithmetic;
//   M ≤ kStreamM: linear_stream (AVX-512), the rows of W read in place as the broadcast operand;
//   above:        linear_gemm (AVX-512), which packs W once per call and reuses it over many rows;
// without AVX-512, small-M up to 16 rows and cblas_sgemm above.
constexpr int kSmallM = kHaveGemm ? 8 : 16;
// kStreamM: up to 256 rows the stream kernel is as fast as linear_gemm or faster; from 512 rows on
// linear_gemm is.
constexpr int kStreamM = 256;

void linear(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  if (M <= kSmallM && kHaveSimdDot)
    linear_small_m(y, x, w, b, M, K, N);
  else if (kHaveGemm && M <= kStreamM)
    linear_stream(y, x, w, b, M, K, N);
  else if (kHaveGemm)
    linear_gemm(y, x, w, b, M, K, N);
  else
    linear_blas(y, x, w, b, M, K, N);
}

void softmax_rows(float* z, int rows, int cols, int valid) {
  for (int r = 0; r < rows; ++r) {
    float* row = z + static_cast<size_t>(r) * cols;
    std::fill(row + valid, row + cols, 0.0f);
    if (valid > 0) softmax_row(row, valid);
  }
}

void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int M, int d, float eps) {
  for_row_blocks(M, [&](int m0, int m1) {
    for (int m = m0; m < m1; ++m) layer_norm_row(out + size_t(m) * d, x + size_t(m) * d, nullptr, gamma, beta, d, eps);
  });
}

void add_layer_norm(float* x, const float* r, const float* gamma, const float* beta, int M, int d, float eps) {
  for_row_blocks(M, [&](int m0, int m1) {
    for (int m = m0; m < m1; ++m)
      layer_norm_row(x + size_t(m) * d, x + size_t(m) * d, r + size_t(m) * d, gamma, beta, d, eps);
  });
}

void add_residual(float* x, const float* r, int M, int d) {
  for_row_blocks(M, [&](int m0, int m1) {
    for (size_t i = size_t(m0) * d; i < size_t(m1) * d; ++i) x[i] += r[i];
  });
}

void activate(float* x, size_t n, Activation act) {
  // Blocks of 2^16 values (32 rows of F = 2048) spread over the threads; fewer values stay on
  // the calling thread.
  constexpr size_t kBlock = size_t(1) << 16;
  parallel_for(int((n + kBlock - 1) / kBlock), [&](int block, int) {
    float* xi = x + size_t(block) * kBlock;
    const size_t len = std::min(kBlock, n - size_t(block) * kBlock);
    if (act == Activation::ReLU) {
      for (size_t i = 0; i < len; ++i) xi[i] = std::max(xi[i], 0.0f);
    } else {
      const float inv_sqrt2 = 0.70710678118654752f;
      for (size_t i = 0; i < len; ++i) xi[i] = 0.5f * xi[i] * (1.0f + std::erf(xi[i] * inv_sqrt2));
    }
  });
}

void attention_head(float* out, const float* q, const float* k, const float* v, float* probs, int L, int dh, int ld_qkv,
                    int ld_out) {
  if (L == 0) return;
  blas_setup();
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  // probs (L, L) = scale · Q (L, dh) · Kᵀ (dh, L)
  if (kHaveGemm)
    gemm(probs, L, q, ld_qkv, k, ld_qkv, /*b_is_nk=*/true, nullptr, scale, L, L, dh);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dh, scale, q, ld_qkv, k, ld_qkv, 0.0f, probs, L);
  softmax_rows(probs, L, L, L);
  // out (L, dh) = probs (L, L) · V (L, dh)
  if (kHaveGemm)
    gemm(out, ld_out, probs, L, v, ld_qkv, /*b_is_nk=*/false, nullptr, 1.0f, L, dh, L);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, L, 1.0f, probs, L, v, ld_qkv, 0.0f, out, ld_out);
}

}  // namespace ordo
