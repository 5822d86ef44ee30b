// ordo: the fast steps of a transformer encoder, one front-end per step: shapes in, the work handed
// to the kernels in engine/kernels/ (threads, AVX-512/AVX2, OpenBLAS). The plain twin of each, in
// double and one row after another, is in engine/reference.h; the tests hold one to the other.
//
// Dimension letters, fixed everywhere:
//   B batch, S sequence length (padded), T = B·S rows, d model width, h heads, dh = d/h head size,
//   F feed-forward width, V vocabulary.
// Matrices are row-major float arrays; a shape comment says (rows, cols). Weights keep PyTorch's
// layout, so a Linear weight W is (out, in) and y = x·Wᵀ + b.
#pragma once

#include <cstddef>

#include <ordo/config.h>

namespace ordo {

// PE(t, 2i) = sin(t / base^(2i/d)),  PE(t, 2i+1) = cos(t / base^(2i/d))      [Vaswani et al. 2017, §3.5]
// i is the pair index; "split" puts the same sines in dims [0, ⌈d/2⌉) and the cosines after them.
// Rows are positions first_position .. first_position+S-1. Computed in double, stored as float.
void sinusoidal_positions(float* pe /* (S, d) */, int S, int d, PeLayout layout, double base, int first_position = 0);

// y = x·Wᵀ + b                                                                 (nn.Linear)
// The kernel is chosen by M, the rows of x: a few rows stream W once (linear_small_m, linear_stream),
// many rows go to a packed GEMM (linear_gemm, or cblas_sgemm without AVX-512). engine/kernels/.
void linear(float* y /* (M, N) */, const float* x /* (M, K) */, const float* w /* (N, K) */,
            const float* b /* (N) or null */, int M, int K, int N);

// softmax(z)_j = exp(z_j − max z) / Σ_k exp(z_k − max z)
// over the first `valid` columns of each row; the rest (masked keys) become 0. valid = 0 gives a
// row of zeros rather than 0/0.
void softmax_rows(float* z /* (rows, cols) */, int rows, int cols, int valid);

// LayerNorm(x) = (x − mean(x)) / √(var(x) + eps) · γ + β, var biased (÷ d)      (nn.LayerNorm)
// out may equal x. The row-wise steps here (layer_norm, add_layer_norm, residual)
// spread blocks of rows over the engine's threads, so they must not run inside a parallel_for job.
void layer_norm(float* out /* (M, d) */, const float* x /* (M, d) */, const float* gamma /* (d) */,
                const float* beta /* (d) */, int M, int d, float eps);

// x = LayerNorm(x + r): the post-LN residual step, x + r never leaving the cache before it is normed.
void add_layer_norm(float* x /* (M, d) */, const float* r /* (M, d) */, const float* gamma /* (d) */,
                    const float* beta /* (d) */, int M, int d, float eps);

// RMSNorm(x) = x / √(mean(x²) + eps) · γ (T5's: no mean, no β); out may equal x. Rows in blocks over
// the threads, as layer_norm; the sum of squares in double.
void rms_norm(float* out /* (M, d) */, const float* x /* (M, d) */, const float* gamma /* (d) */, int M, int d,
              float eps);

// x = x + r: the pre-LN residual step.
void residual(float* x /* (M, d) */, const float* r /* (M, d) */, int M, int d);

// ReLU(x) = max(0, x);  GELU(x) = x·Φ(x) = ½x·(1 + erf(x/√2))  (the exact form);
// GELUTanh(x) = ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (the approximation of Hendrycks and Gimpel)
// x: n values, e.g. the (T, F) feed-forward hidden layer, changed in place, in blocks over the
// threads (not inside a parallel_for job either).
void activation(float* x, size_t n, Activation act);

// Attention(Q, K, V) = softmax(Q·Kᵀ / √dh)·V                                   [§3.2.1]
// (scaled = false: softmax(Q·Kᵀ + B)·V, T5's, without the 1/√dh)
// for one (sequence, head) of L valid tokens. q, k, v are (L, dh) views with row stride ld_qkv
// (the heads are read in place inside the fused qkv buffer); out is (L, dh) with row stride ld_out.
// The query rows go `block` at a time: a block's scores against all L keys, the softmax of each
// full row, times V. So the working memory is (block, L), not (L, L), and the result is the same
// as one block of all rows (each row of the softmax is complete either way).
// scratch: attention_scratch_floats(L, dh, block) floats; its first block·L floats hold the last
// block's weights (row stride L), so block ≥ L leaves the whole (L, L) table there, row i query i's
// distribution over the L keys. One thread: the encoder runs one (sequence, head) per task.
constexpr int kQueryBlock = 96;  // a multiple of the GEMM's 12-row tile; docs/performance.md
// alibi_before, alibi_after: ALiBi's bias, −m_before·(i − j) for a key before the query (j < i),
// −m_after·(j − i) for one after it, added to each score q_i·k_j/√dh before the softmax
// (reference::attention_head has the equation); an infinite slope leaves that side no weight (its
// −∞ scores become exp(−104) = 0 in the softmax); 0 and 0: none.
// relative: null, or a bias that depends on the offset j − i alone, relative[j − i] added to each
// score in the same place (t5-buckets: W[h, bucket(j − i)]); it points at offset 0 of 2L − 1 values,
// offsets −(L − 1) .. L − 1.
size_t attention_scratch_floats(int L, int dh, int block);
void attention_head(float* out, const float* q, const float* k, const float* v, float* scratch, int L, int dh,
                    int ld_qkv, int ld_out, int block = kQueryBlock, float alibi_before = 0.0f,
                    float alibi_after = 0.0f, const float* relative = nullptr, bool scaled = true);

// RoPE [Su et al. 2021, eq. 34]: the angles t·θ_i, θ_i = base^(−2i/dh), of positions
// t = first_position .. first_position+S−1, as cos and sin tables (S, dh/2) (computed in double).
void rope_table(float* cos /* (S, dh/2) */, float* sin /* (S, dh/2) */, int S, int dh, double base,
                int first_position = 0);
// Each of the h heads' dh columns of S rows (row stride ld) rotated pair by pair, in place:
//   x'_2i = x_2i·cos(tθ_i) − x_2i+1·sin(tθ_i),   x'_2i+1 = x_2i·sin(tθ_i) + x_2i+1·cos(tθ_i)
// (an odd dh leaves its last column as it is).
void rope(float* x, int S, int ld, int h, int dh, const float* cos, const float* sin);

}  // namespace ordo
