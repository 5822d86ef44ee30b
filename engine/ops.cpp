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
// 1 × 8 to 4 × 512, and on all-MiniLM-L6-v2's widths; the figures are in docs/performance.md):
//   M ≤ kSmallM:  linear_small_m, dot products along K, the weights read from memory once;
//   M ≤ kStreamM: linear_stream, the rows of W read in place as the broadcast operand;
//   above:        linear_gemm, which packs W once per call and reuses it over many rows;
// below AVX2, cblas_sgemm at every M. (Where prepack_weights() says so, at AVX-512 on Intel, the
// encoder's layer products up to kPrepackedRows rows skip this choice: they run linear_prepacked on
// weights packed once, engine/encoder.cpp's project().) The small-M kernel is the fastest up to 8 rows; from 12 on
// the stream kernel is, at AVX2 and at AVX-512 (at 16 rows, 0.69 of the small-M kernel's time on
// all-MiniLM-L6-v2's 24 products, 0.67 on the base model's), and at AVX2 it is faster than
// linear_gemm up to 256 rows as well (0.88 of its time at 64, 0.94 at 128).
constexpr int kSmallM = 8;
// kStreamM: up to 256 rows the stream kernel is as fast as linear_gemm or faster; from 512 rows on
// linear_gemm is.
constexpr int kStreamM = 256;

void linear(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  if (M <= kSmallM && have_simd_dot())
    linear_small_m(y, x, w, b, M, K, N);
  else if (have_stream() && M <= kStreamM)
    linear_stream(y, x, w, b, M, K, N);
  else if (have_gemm())
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

void rms_norm(float* out, const float* x, const float* gamma, int M, int d, float eps) {
  for_row_blocks(M, [&](int m0, int m1) {
    for (int m = m0; m < m1; ++m) {
      const float* xr = x + size_t(m) * d;
      float* yr = out + size_t(m) * d;
      double square = 0.0;
      for (int j = 0; j < d; ++j) square += double(xr[j]) * xr[j];
      const float inv = static_cast<float>(1.0 / std::sqrt(square / d + eps));  // 1 / √(mean(x²) + eps)
      for (int j = 0; j < d; ++j) yr[j] = xr[j] * inv * gamma[j];
    }
  });
}

void residual(float* x, const float* r, int M, int d) {
  for_row_blocks(M, [&](int m0, int m1) {
    for (size_t i = size_t(m0) * d; i < size_t(m1) * d; ++i) x[i] += r[i];
  });
}

void activation(float* x, size_t n, Activation act) {
  // Spread over the threads by split_tasks, in pieces of whole vectors. A GELU costs about what
  // 32 FLOPs do (an exponential, a division and a polynomial per value), so one short text's
  // 16 × 1536 values are split and a single token's 1536 are not.
  constexpr double kFlopsPerValue = 32;
  constexpr size_t kVector = 16;
  const int tasks = split_tasks(double(n) * kFlopsPerValue, int((n + kVector - 1) / kVector), kernel_threads());
  const size_t per = ((n + size_t(tasks) - 1) / size_t(tasks) + kVector - 1) / kVector * kVector;
  parallel_for(tasks, [&](int task, int) {
    if (size_t(task) * per >= n) return;
    float* xi = x + size_t(task) * per;
    const size_t len = std::min(per, n - size_t(task) * per);
    if (act == Activation::ReLU) {
      for (size_t i = 0; i < len; ++i) xi[i] = std::max(xi[i], 0.0f);
    } else if (act == Activation::GELUTanh) {
      gelu_tanh(xi, len);
    } else {
      gelu(xi, len);
    }
  });
}

// With AVX-512 the keys and the values are packed once per head (gemm.h) and every block of query
// rows meets them packed; otherwise cblas_sgemm reads them in place.
size_t attention_scratch_floats(int L, int dh, int block) {
  const size_t probs = size_t(std::min(block, L)) * L;
  return have_gemm() ? probs + packed_b_floats(L, dh) + packed_b_floats(dh, L) : probs;
}

void attention_head(float* out, const float* q, const float* k, const float* v, float* scratch, int L, int dh,
                    int ld_qkv, int ld_out, int block, float alibi_before, float alibi_after, const float* relative,
                    bool scaled) {
  if (L == 0) return;
  blas_setup();
  const float scale = scaled ? 1.0f / std::sqrt(static_cast<float>(dh)) : 1.0f;
  block = std::max(1, std::min(block, L));
  float* probs = scratch;
  float* k_packed = scratch + size_t(block) * L;
  float* v_packed = k_packed + packed_b_floats(L, dh);
  if (have_gemm()) {
    pack_b_all(k_packed, k, ld_qkv, /*b_is_nk=*/true, L, dh);   // Kᵀ (dh, L)
    pack_b_all(v_packed, v, ld_qkv, /*b_is_nk=*/false, dh, L);  // V (L, dh)
  }
  for (int r0 = 0; r0 < L; r0 += block) {
    const int n = std::min(block, L - r0);
    const float* qb = q + size_t(r0) * ld_qkv;
    float* ob = out + size_t(r0) * ld_out;
    // probs (n, L) = scale · Q[r0 : r0+n] (n, dh) · Kᵀ (dh, L)
    if (have_gemm())
      gemm_packed(probs, L, qb, ld_qkv, k_packed, scale, n, L, dh);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, L, dh, scale, qb, ld_qkv, k, ld_qkv, 0.0f, probs, L);
    if (alibi_before > 0.0f || alibi_after > 0.0f)  // i the query row r0 + r
      for (int r = 0; r < n; ++r) {
        const int i = r0 + r;
        float* row = probs + size_t(r) * L;
        for (int j = 0; j < i; ++j) row[j] -= alibi_before * float(i - j);     // behind: −m_before·(i − j)
        for (int j = i + 1; j < L; ++j) row[j] -= alibi_after * float(j - i);  // ahead: −m_after·(j − i)
      }
    if (relative)  // + W[h, bucket(j − i)], looked up by offset
      for (int r = 0; r < n; ++r) {
        const int i = r0 + r;
        float* row = probs + size_t(r) * L;
        for (int j = 0; j < L; ++j) row[j] += relative[j - i];
      }
    softmax_rows(probs, n, L, L);
    // out[r0 : r0+n] (n, dh) = probs (n, L) · V (L, dh)
    if (have_gemm())
      gemm_packed(ob, ld_out, probs, L, v_packed, 1.0f, n, dh, L);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, dh, L, 1.0f, probs, L, v, ld_qkv, 0.0f, ob, ld_out);
  }
}

void rope_table(float* cos, float* sin, int S, int dh, double base, int first_position) {
  const int pairs = dh / 2;
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < pairs; ++i) {
      const double angle = (first_position + s) * std::pow(base, -2.0 * i / dh);
      cos[size_t(s) * pairs + i] = static_cast<float>(std::cos(angle));
      sin[size_t(s) * pairs + i] = static_cast<float>(std::sin(angle));
    }
}

void rope(float* x, int S, int ld, int h, int dh, const float* cos, const float* sin) {
  const int pairs = dh / 2;
  for (int s = 0; s < S; ++s)
    for (int head = 0; head < h; ++head) {
      float* row = x + size_t(s) * ld + size_t(head) * dh;
      const float* c = cos + size_t(s) * pairs;
      const float* n = sin + size_t(s) * pairs;
      for (int i = 0; i < pairs; ++i) {
        const float a = row[2 * i], b = row[2 * i + 1];
        row[2 * i] = a * c[i] - b * n[i];
        row[2 * i + 1] = a * n[i] + b * c[i];
      }
    }
}

}  // namespace ordo
