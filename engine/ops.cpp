#include "engine/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ordo {

void sinusoidal_positions(float* pe, int S, int d, PeLayout layout, double base, int first_position) {
  const int pairs = (d + 1) / 2;  // ⌈d/2⌉ frequencies; an odd d has one sine without its cosine
  for (int s = 0; s < S; ++s) {
    const double t = static_cast<double>(first_position + s);
    float* row = pe + static_cast<size_t>(s) * d;
    for (int i = 0; i < pairs; ++i) {
      const double angle = t / std::pow(base, 2.0 * i / d);  // t / base^(2i/d)
      const int sin_dim = layout == PeLayout::Interleaved ? 2 * i : i;
      const int cos_dim = layout == PeLayout::Interleaved ? 2 * i + 1 : pairs + i;
      row[sin_dim] = static_cast<float>(std::sin(angle));
      if (cos_dim < d) row[cos_dim] = static_cast<float>(std::cos(angle));
    }
  }
}

void linear(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  if (b)
    for (int m = 0; m < M; ++m) std::copy(b, b + N, y + static_cast<size_t>(m) * N);
  // y (M, N) = 1 · x (M, K) · Wᵀ (K, N) + β·y, with β = 1 when y already holds the bias.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, b ? 1.0f : 0.0f, y, N);
}

void linear_reference(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += double(x[size_t(m) * K + k]) * w[size_t(n) * K + k];
      y[size_t(m) * N + n] = static_cast<float>(acc);
    }
}

void softmax_rows(float* z, int rows, int cols, int valid) {
  for (int r = 0; r < rows; ++r) {
    float* row = z + static_cast<size_t>(r) * cols;
    std::fill(row + valid, row + cols, 0.0f);
    if (valid == 0) continue;
    const float max = *std::max_element(row, row + valid);  // exp(z − max) ≤ 1: no overflow
    float sum = 0.0f;
    for (int j = 0; j < valid; ++j) {
      row[j] = std::exp(row[j] - max);
      sum += row[j];
    }
    const float inv = 1.0f / sum;  // sum ≥ 1: the max term contributes exp(0)
    for (int j = 0; j < valid; ++j) row[j] *= inv;
  }
}

void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int M, int d, float eps) {
  for (int m = 0; m < M; ++m) {
    const float* xi = x + static_cast<size_t>(m) * d;
    float* yi = out + static_cast<size_t>(m) * d;
    double sum = 0.0;
    for (int j = 0; j < d; ++j) sum += xi[j];
    const double mean = sum / d;
    double sq = 0.0;
    for (int j = 0; j < d; ++j) sq += (xi[j] - mean) * (xi[j] - mean);
    const double inv_std = 1.0 / std::sqrt(sq / d + eps);  // biased variance, eps inside the root
    for (int j = 0; j < d; ++j) yi[j] = static_cast<float>((xi[j] - mean) * inv_std) * gamma[j] + beta[j];
  }
}

void activate(float* x, size_t n, Activation act) {
  if (act == Activation::ReLU) {
    for (size_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
  } else {
    const float inv_sqrt2 = 0.70710678118654752f;
    for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
  }
}

void attention_head(float* out, const float* q, const float* k, const float* v, float* probs, int L, int dh,
                    int ld_qkv, int ld_out) {
  if (L == 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  // probs (L, L) = scale · Q (L, dh) · Kᵀ (dh, L)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dh, scale, q, ld_qkv, k, ld_qkv, 0.0f, probs, L);
  softmax_rows(probs, L, L, L);
  // out (L, dh) = probs (L, L) · V (L, dh)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dh, L, 1.0f, probs, L, v, ld_qkv, 0.0f, out, ld_out);
}

void attention_head_reference(float* out, const float* q, const float* k, const float* v, float* probs, int L,
                              int dh, int ld_qkv, int ld_out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  for (int i = 0; i < L; ++i) {
    double max = -INFINITY;
    std::vector<double> row(L);
    for (int j = 0; j < L; ++j) {
      double dot = 0.0;
      for (int c = 0; c < dh; ++c) dot += double(q[size_t(i) * ld_qkv + c]) * k[size_t(j) * ld_qkv + c];
      row[j] = dot * scale;
      max = std::max(max, row[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < L; ++j) sum += (row[j] = std::exp(row[j] - max));
    for (int j = 0; j < L; ++j) probs[size_t(i) * L + j] = static_cast<float>(row[j] / sum);
    for (int c = 0; c < dh; ++c) {
      double acc = 0.0;
      for (int j = 0; j < L; ++j) acc += row[j] / sum * v[size_t(j) * ld_qkv + c];
      out[size_t(i) * ld_out + c] = static_cast<float>(acc);
    }
  }
}

}  // namespace ordo
