#include "engine/ops.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "engine/gemm.h"
#include "engine/parallel.h"
#include "engine/simd.h"

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

// The kernel for y = x·Wᵀ + b is chosen by M, the rows of x (measured on the base model from
// 1 × 8 to 4 × 512, docs/performance.md):
//   M ≤ kSmallM:  linear_small_m, dot products along K; the weights stream from memory once and
//                 the kernel waits on memory, not on arithmetic;
//   M ≤ kStreamM: linear_stream (AVX-512), the rows of W read in place as the broadcast operand;
//   above:        linear_gemm (AVX-512), which packs W once per call and reuses it over many rows;
// without AVX-512, small-M up to 16 rows and cblas_sgemm above.
constexpr int kSmallM = kHaveGemm ? 8 : 16;
// kStreamM: at 1 × 128 the stream kernel takes 11.4–11.8 ms against 12.8–13.1 for linear_gemm; at
// 1 × 256 the two are level (24 ms); from 512 rows on linear_gemm is as fast or faster.
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

namespace {

// One SIMD register of floats, as wide as the machine has: the small-M kernel is written once
// against these few operations.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec vzero() {
  return _mm512_setzero_ps();
}
inline Vec vload(const float* p) {
  return _mm512_loadu_ps(p);
}
inline Vec vload_first(const float* p, int n) {
  return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p);
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline float vsum(Vec a) {
  return _mm512_reduce_add_ps(a);
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec vzero() {
  return _mm256_setzero_ps();
}
inline Vec vload(const float* p) {
  return _mm256_loadu_ps(p);
}
inline Vec vload_first(const float* p, int n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline float vsum(Vec a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#else
using Vec = float;
constexpr int kLanes = 1;
inline Vec vzero() {
  return 0.0f;
}
inline Vec vload(const float* p) {
  return *p;
}
inline Vec vload_first(const float* p, int) {
  return *p;
}
inline Vec vfma(Vec a, Vec b, Vec c) {
  return a * b + c;
}
inline float vsum(Vec a) {
  return a;
}
#endif

// At a few rows of x the kernel waits on memory: every weight is read once, and the rows of W are
// short streams (2–8 KB) that the hardware prefetchers, which stop at 4 KB page boundaries, barely
// get going on. So the kernel asks for lines itself: while it works on one tile of NR rows of W it
// asks for the same columns of the next tile's rows, and for the line 1 KB ahead in its own rows
// (which covers the first tile of a block). Every pass over a tile asks again: asking in the first
// pass only measured slower. 1 × 8 on the base model: 2.4 ms; 2.6–2.7 with the 1 KB look-ahead
// alone; 2.8 with no software prefetch.
constexpr int kPrefetchAhead = 256;

// y[m][n] = b[n] + Σ_k x[m][k]·w[n][k]   for an MR × NR tile: MR rows of x against NR rows of W,
// MR·NR dot products kept in registers along K, one horizontal sum each at the end.
template <int MR, int NR>
void dot_tile(float* y, int ldy, const float* x, const float* w, const float* b, int K) {
  Vec acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vzero();
  int k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    for (int j = 0; j < NR; ++j) {
      __builtin_prefetch(w + size_t(NR + j) * K + k);
      __builtin_prefetch(w + size_t(j) * K + k + kPrefetchAhead);
    }
    Vec wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = vload(w + size_t(j) * K + k);
    for (int i = 0; i < MR; ++i) {
      const Vec xv = vload(x + size_t(i) * K + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfma(xv, wv[j], acc[i][j]);
    }
  }
  if (k < K) {  // the last K mod kLanes columns, through a masked load
    Vec wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = vload_first(w + size_t(j) * K + k, K - k);
    for (int i = 0; i < MR; ++i) {
      const Vec xv = vload_first(x + size_t(i) * K + k, K - k);
      for (int j = 0; j < NR; ++j) acc[i][j] = vfma(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) y[size_t(i) * ldy + j] = vsum(acc[i][j]) + (b ? b[j] : 0.0f);
}

// With 16 lanes (AVX-512), 2 rows of x against 8 rows of W: eight weight streams in flight per
// thread keep more memory requests going than four, and at a few rows of x the kernel waits on
// memory, not on arithmetic (1 x 8 on the base model: 2.6 ms against 3.4 ms for 4 x 4).
constexpr int kTileM = kLanes == 16 ? 2 : 4, kTileN = kLanes == 16 ? 8 : 4;
using DotTile = void (*)(float*, int, const float*, const float*, const float*, int);
template <int MR, int... NR>
constexpr std::array<DotTile, kTileN> tile_row(std::integer_sequence<int, NR...>) {
  return {dot_tile<MR, NR + 1>...};
}
template <int... MR>
constexpr std::array<std::array<DotTile, kTileN>, kTileM> tile_table(std::integer_sequence<int, MR...>) {
  return {tile_row<MR + 1>(std::make_integer_sequence<int, kTileN>{})...};
}
// kTiles[mr − 1][nr − 1]: the tile for the edges, where fewer than kTileM rows or kTileN columns remain.
constexpr std::array<std::array<DotTile, kTileN>, kTileM> kTiles =
    tile_table(std::make_integer_sequence<int, kTileM>{});

}  // namespace

// Tasks are blocks of y, kRowsPerTask rows × an equal share of the columns per thread: each thread
// streams one contiguous run of W rows, tile after tile, which is what the prefetch above follows
// (handing out 32-column blocks as threads came free was 8% slower at 1 × 8). Inside a task, each
// tile of kTileN weight rows stays in L1 or L2 while the block's rows of x pass over it.
void linear_small_m(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  constexpr int kRowsPerTask = 64;
  const int threads = kernel_threads();
  const int cols_per_task = (N + threads * kTileN - 1) / (threads * kTileN) * kTileN;
  const int row_blocks = (M + kRowsPerTask - 1) / kRowsPerTask;
  parallel_for(row_blocks * ((N + cols_per_task - 1) / cols_per_task), [&](int task, int) {
    const int m0 = task % row_blocks * kRowsPerTask, m_end = std::min(M, m0 + kRowsPerTask);
    const int n0 = task / row_blocks * cols_per_task, n_end = std::min(N, n0 + cols_per_task);
    for (int n = n0; n < n_end; n += kTileN) {
      const int nr = std::min(kTileN, n_end - n);
      for (int m = m0; m < m_end; m += kTileM) {
        const int mr = std::min(kTileM, m_end - m);
        kTiles[mr - 1][nr - 1](y + size_t(m) * N + n, N, x + size_t(m) * K, w + size_t(n) * K, b ? b + n : nullptr, K);
      }
    }
  });
}

void linear_reference(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += double(x[size_t(m) * K + k]) * w[size_t(n) * K + k];
      y[size_t(m) * N + n] = static_cast<float>(acc);
    }
}

#if defined(__AVX512F__)
// e^x = 2^n · e^r with n = round(x / ln 2) and |r| ≤ ln2 / 2; e^r from Cephes' expf polynomial
// (relative error ≈ 1e-7); scalef multiplies by 2^n, going to 0 for x below about −104.
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln 2 in two parts: exact high bits,
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);      // then the rest
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));  // p·r² + r + 1
  return _mm512_scalef_ps(p, n);
}
#endif

void softmax_rows(float* z, int rows, int cols, int valid) {
  for (int r = 0; r < rows; ++r) {
    float* row = z + static_cast<size_t>(r) * cols;
    std::fill(row + valid, row + cols, 0.0f);
    if (valid == 0) continue;
#if defined(__AVX512F__)
    // The same three passes as below, 16 columns at a time; the last block through a mask.
    auto mask = [valid](int j) { return valid - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (valid - j)) - 1); };
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < valid; j += 16)
      vmax = _mm512_mask_max_ps(vmax, mask(j), vmax, _mm512_maskz_loadu_ps(mask(j), row + j));
    const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));  // exp(z − max) ≤ 1: no overflow
    __m512 vsum = _mm512_setzero_ps();
    for (int j = 0; j < valid; j += 16) {
      const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask(j), row + j), max));
      _mm512_mask_storeu_ps(row + j, mask(j), e);
      vsum = _mm512_mask_add_ps(vsum, mask(j), vsum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));  // sum ≥ 1: exp(0) is one term
    for (int j = 0; j < valid; j += 16)
      _mm512_mask_storeu_ps(row + j, mask(j), _mm512_mul_ps(_mm512_maskz_loadu_ps(mask(j), row + j), inv));
#else
    const float max = *std::max_element(row, row + valid);  // exp(z − max) ≤ 1: no overflow
    float sum = 0.0f;
    for (int j = 0; j < valid; ++j) {
      row[j] = std::exp(row[j] - max);
      sum += row[j];
    }
    const float inv = 1.0f / sum;  // sum ≥ 1: the max term contributes exp(0)
    for (int j = 0; j < valid; ++j) row[j] *= inv;
#endif
  }
}

namespace {

// Rows per task when a row-wise step (LayerNorm, residual add) is spread over the threads: a
// block of 32 rows of d = 512 is 64 KB, enough work to pay for handing it out, and a pass over
// 32 rows or fewer runs on the calling thread alone.
constexpr int kRowsPerBlock = 32;

// Runs rows(m0, m1) over [0, M) in blocks of kRowsPerBlock rows, spread over the threads.
template <typename Rows>
void for_row_blocks(int M, Rows rows) {
  const int blocks = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  parallel_for(blocks, [&](int block, int) { rows(block * kRowsPerBlock, std::min(M, (block + 1) * kRowsPerBlock)); });
}

// y = LayerNorm(x) for one row of d, the sums in double (the reference, and the path without
// AVX-512); y may equal x.
void layer_norm_row_double(float* y, const float* x, const float* gamma, const float* beta, int d, float eps) {
  double sum = 0.0;
  for (int j = 0; j < d; ++j) sum += x[j];
  const double mean = sum / d;
  double sq = 0.0;
  for (int j = 0; j < d; ++j) sq += (x[j] - mean) * (x[j] - mean);
  const double inv_std = 1.0 / std::sqrt(sq / d + eps);  // biased variance, eps inside the root
  for (int j = 0; j < d; ++j) y[j] = static_cast<float>((x[j] - mean) * inv_std) * gamma[j] + beta[j];
}

// y = LayerNorm(x + r) for one row of d (r may be null: y = LayerNorm(x)); y may equal x.
// With r, the sum x + r is first written to y and read back from there (the row is in L1).
// Two passes over the row: the mean, then the mean square about it (no cancellation as in
// E[x²] − E[x]²). The AVX-512 path sums in float lanes, each lane d/16 terms of the row.
void layer_norm_row(float* y, const float* x, const float* r, const float* gamma, const float* beta, int d, float eps) {
#if defined(__AVX512F__)
  auto mask = [d](int j) { return d - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (d - j)) - 1); };
  __m512 sum = _mm512_setzero_ps();
  if (r) {
    for (int j = 0; j < d; j += 16) {
      const __m512 s = _mm512_add_ps(_mm512_maskz_loadu_ps(mask(j), x + j), _mm512_maskz_loadu_ps(mask(j), r + j));
      _mm512_mask_storeu_ps(y + j, mask(j), s);
      sum = _mm512_add_ps(sum, s);  // the masked-off lanes of s are 0
    }
    x = y;
  } else {
    for (int j = 0; j < d; j += 16) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask(j), x + j));
  }
  const __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sum) / float(d));
  __m512 sq = _mm512_setzero_ps();
  for (int j = 0; j < d; j += 16) {
    const __m512 c = _mm512_maskz_sub_ps(mask(j), _mm512_maskz_loadu_ps(mask(j), x + j), mean);
    sq = _mm512_fmadd_ps(c, c, sq);
  }
  // biased variance, eps inside the root
  const __m512 inv_std = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(sq) / float(d) + eps));
  for (int j = 0; j < d; j += 16) {
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask(j), x + j), mean), inv_std);
    _mm512_mask_storeu_ps(
        y + j, mask(j),
        _mm512_fmadd_ps(xhat, _mm512_maskz_loadu_ps(mask(j), gamma + j), _mm512_maskz_loadu_ps(mask(j), beta + j)));
  }
#else
  if (r) {
    for (int j = 0; j < d; ++j) y[j] = x[j] + r[j];
    x = y;
  }
  layer_norm_row_double(y, x, gamma, beta, d, eps);
#endif
}

}  // namespace

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

void layer_norm_reference(float* out, const float* x, const float* gamma, const float* beta, int M, int d, float eps) {
  for (int m = 0; m < M; ++m) layer_norm_row_double(out + size_t(m) * d, x + size_t(m) * d, gamma, beta, d, eps);
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

void attention_head_reference(float* out, const float* q, const float* k, const float* v, float* probs, int L, int dh,
                              int ld_qkv, int ld_out) {
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
