// ordo: the plain encoder. Read this file first.
//
// nn.TransformerEncoder (batch_first, eval mode) for one sequence, written straight from the
// equations: double precision, no threads, no intrinsics, no buffers reused. Every step is one
// plain function, output first, sizes last, with its equation above it (here in full, and again
// above its code in reference.cpp); forward() at the end calls them in the order of the paper's
// figure. It is slow on purpose.
//
// The fast encoder (engine/encoder.h) computes the same thing on padded batches in float, through
// the kernels in engine/kernels/; the tests hold it to forward() here, and each fast step in
// engine/ops.h to its twin here.
//
// Dimension letters: S sequence length, d model width, h heads, dh = d/h, F feed-forward width,
// V vocabulary. Matrices are row-major; a shape comment says (rows, cols). Weights are the model's
// floats in PyTorch's layout, so a Linear weight W is (out, in) and y = x·Wᵀ + b.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <ordo/engine/model.h>
#include <ordo/trace.h>

namespace ordo::reference {

// x_t = E[id_t] · scale                                   (nn.Embedding; scale = √d or 1)
void embed(double* x /* (S, d) */, const int32_t* ids /* (S) */, const float* E /* (V, d) */, int S, int d,
           double scale);

// PE(t, 2i) = sin(t / base^(2i/d)),  PE(t, 2i+1) = cos(t / base^(2i/d))      [Vaswani et al. 2017, §3.5]
// i is the pair index; the split layout puts the sines in dims [0, ⌈d/2⌉) and the cosines after
// them. Rows are positions first_position .. first_position+S-1.
void sinusoidal_positions(double* pe /* (S, d) */, int S, int d, PeLayout layout, double base, int first_position = 0);

// y = x·Wᵀ + b                                                                 (nn.Linear)
void linear(double* y /* (M, N) */, const double* x /* (M, K) */, const float* w /* (N, K) */,
            const float* b /* (N) or null */, int M, int K, int N);

// The same product at int8 and bf16 (--compute-type) is in reference_reduced.h, beside this file.

// softmax(z)_j = exp(z_j − max z) / Σ_k exp(z_k − max z), over one row of n, in place.
void softmax(double* z, int n);

// Attention(Q, K, V) = softmax(Q·Kᵀ / √dh)·V for one head of L tokens            [§3.2.1]
// (scaled = false: softmax(Q·Kᵀ + B)·V, without the 1/√dh, as T5 computes it)
// q, k, v: (L, dh) views with row stride ld_qkv; out: (L, dh) with row stride ld_out;
// probs: the (L, L) attention weights, row i query i's distribution over the keys.
// ALiBi [Press, Smith and Lewis 2022]: each score q_i·k_j/√dh gets, before the softmax,
//   b_ij = −m_before·(i − j)   for a key before the query (j < i)
//   b_ij = −m_after·(j − i)    for a key after it (j > i),   b_ii = 0
// (alibi_head_slopes below gives the two slopes of a head; an infinite slope, −∞: that side gets no
// weight). Both slopes 0: no bias.
// bias: null, or an (L, L) bias b_ij added in the same place (t5-buckets: W[h, bucket(j − i)], below).
void attention_head(double* out, const double* q, const double* k, const double* v, double* probs /* (L, L) */, int L,
                    int dh, int ld_qkv, int ld_out, double alibi_before = 0.0, double alibi_after = 0.0,
                    const double* bias = nullptr, bool scaled = true);

// ALiBi's slopes m_0 .. m_{h−1}: the geometric sequence 2^(−8/h), 2^(−16/h), ..., 2^(−8) for h a power
// of two; for other h, the slopes of the power of two below h, then every other slope of the one above.
std::vector<double> alibi_slopes(int h);

// The two slopes of head `head` of h. The paper's models are causal: a query sees only the keys up to
// itself. An encoder sees both sides, so Alibi takes the heads in pairs: the even head of a pair is
// the paper's causal head, the odd one its mirror image, both with the slope of the pair's first head:
//   even head: before m_head, after ∞        b_ij = −m_head·(i − j) for j ≤ i, −∞ for j > i
//   odd head:  before ∞, after m_{head−1}    b_ij = −m_{head−1}·(j − i) for j ≥ i, −∞ for j < i
// (an odd h's last head looks back alone). Nothing is learned, as in the paper. AlibiSymmetric:
// m_head both ways, −m_head·|i − j|, every head seeing both sides, which a text read backwards cannot
// tell from itself (every distance stays). Any other encoding: 0 and 0.
// `slopes` (config.json's alibi_slopes, h of them), when given, replaces m_head (symmetric) and the
// pair's m (pairs) by slopes[head]; e.g. 8 heads in pairs, a pair for each of the four slopes of the
// paper's 4-head set: 1/4 1/4 1/16 1/16 1/64 1/64 1/256 1/256.
struct AlibiSlopes {
  double before = 0.0, after = 0.0;
};
AlibiSlopes alibi_head_slopes(PositionalEncoding p, int h, int head, const std::vector<double>& slopes = {});

// b_ij of a head with these slopes: −before·(i − j) for j < i, −after·(j − i) for j > i, 0 for j = i
// (an infinite slope gives −∞ on its side, never ∞·0).
template <typename T>
T alibi_bias(int i, int j, T before, T after) {
  return j < i ? T(0) - before * T(i - j) : j > i ? T(0) - after * T(j - i) : T(0);
}

// T5's relative position buckets [Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
// Unified Text-to-Text Transformer", §2.1], bidirectional: the bucket of a key at offset j − i from its
// query, of num_buckets (a multiple of 4). Half the buckets for keys before the query and the query
// itself, half for keys after it; in each half the distances n = |j − i| below exact = num_buckets/4
// get a bucket each, the longer ones share buckets spaced by log n up to max_distance, and every
// distance from there on falls in the side's last bucket:
//   half = num_buckets/2,  exact = half/2,  side = half if j > i else 0
//   bucket = side + n                                                               for n < exact
//   bucket = side + min(half − 1, exact + ⌊(half − exact)·ln(n/exact)/ln(max_distance/exact) + 10⁻⁹⌋)  else
// (the 10⁻⁹ settles the n whose log ratio is a whole number, e.g. n = 16 of 32 buckets and
// max_distance 32, as exact arithmetic would, whatever the last bit of the machine's log).
// A t5-buckets head h adds b_ij = W[h, bucket(j − i)] to its scores, W (h, num_buckets) one learned
// table shared by all layers: a scalar per head and offset class, where Shaw et al. 2018 learn a
// vector per clipped offset and need one more product q·a_(j−i) per pair for it.
int relative_bucket(int offset, int num_buckets, int max_distance);

// RoPE [Su et al. 2021, "RoFormer", eq. 34]: the dh columns of each of h heads, S rows of stride ld,
// rotated in place pair by pair — pairs (2i, 2i+1), as in the paper's equation and in the
// interleaved sinusoids — by the angle t·θ_i of the row's position t = first_position + row,
// θ_i = base^(−2i/dh):
//   x'_2i = x_2i·cos(tθ_i) − x_2i+1·sin(tθ_i),   x'_2i+1 = x_2i·sin(tθ_i) + x_2i+1·cos(tθ_i)
// A rotation keeps lengths and q'_t·k'_s depends on t − s only. An odd dh keeps its last column.
void rope(double* x, int S, int ld, int h, int dh, double base, int first_position = 0);

// MultiHead(x) = Concat(head_1 .. head_h)·W_oᵀ + b_o,                          [§3.2.2]
// head_i = Attention(x·W_qᵢᵀ, x·W_kᵢᵀ, x·W_vᵢᵀ); the three projections are one Linear, in_proj.
// Each head is dh = c.head_dim() wide, the concatenation A = h·dh (d, but for a T5 encoder whose d_kv
// says otherwise), so W_q, W_k, W_v are (A, d) and W_o (d, A); c.scale_attention false drops the 1/√dh.
// positions: Rope turns q and k (rope() above, with c.pe_base) before the scores, Alibi,
// AlibiSymmetric and T5Buckets bias the scores (T5Buckets from w.position_bias, with c's buckets and
// max distance: relative_bucket above; ALiBi with c.alibi_slopes: alibi_head_slopes above), and so does
// any other positions but None for an MPNet (c.bucket_bias(): its learned positions went into the input,
// its bucket bias comes here, after the 1/√dh); None (--no-pe) leaves attention as it is.
// masked: empty, or h flags; head i with masked[i] true is switched off, head_i = 0 (its slot of the
// concatenation stays zero, so W_o adds only b_o for it).
void self_attention(double* out /* (S, d) */, const double* x /* (S, d) */, const LayerWeights& w, const Config& c,
                    int S, PositionalEncoding positions, const std::vector<bool>& masked = {});

// LayerNorm(x) = (x − mean(x)) / √(var(x) + eps) · γ + β, var biased (÷ d)      (nn.LayerNorm)
void layer_norm(double* y /* (M, d) */, const double* x /* (M, d) */, const float* gamma /* (d) */,
                const float* beta /* (d) */, int M, int d, double eps);

// RMSNorm(x) = x / √(mean(x²) + eps) · γ     [Zhang and Sennrich 2019; T5's LayerNorm: no mean, no β]
void rms_norm(double* y /* (M, d) */, const double* x /* (M, d) */, const float* gamma /* (d) */, int M, int d,
              double eps);

// The model's norm: layer_norm (β may not be null then) or rms_norm (β unused).
void norm(double* y /* (M, d) */, const double* x /* (M, d) */, const float* gamma, const float* beta, int M, int d,
          double eps, Norm kind);

// ReLU(x) = max(0, x);  GELU(x) = x·Φ(x) = ½x·(1 + erf(x/√2))  (the exact form);
// GELUTanh(x) = ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); n values in place.
void activation(double* x, size_t n, Activation act);

// x = x + r, n values: the residual connection of a sublayer.
void residual(double* x, const double* r, size_t n);

// x_t = x_t + p_t, n values: the positions added to the token vectors, once, before the first layer
// (the same sum as residual(), named for what it does here).
void add_positions(double* x, const double* p, size_t n);

// FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2                                           [§3.3]
// gated (w.linear1_v_weight set; T5's "gated-gelu", Shazeer 2020's GEGLU):
// FFN(x) = (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ, ⊙ the product element by element
void feed_forward(double* out /* (S, d) */, const double* x /* (S, d) */, const LayerWeights& w, int S, int d, int F,
                  Activation act);

// The sublayer connection, the one place where post-LN and pre-LN differ:
//   post-LN (the paper's, norm_first = false):  x = LayerNorm(x + f(x))
//   pre-LN  (norm_first = true):                 x = x + f(LayerNorm(x))
// f(out, in) computes one sublayer, (S, d) -> (S, d). kind: LayerNorm or RMSNorm (norm() above).
using Sublayer = std::function<void(double* out, const double* in)>;
void sublayer(double* x /* (S, d) */, int S, int d, bool norm_first, const float* gamma, const float* beta, double eps,
              const Sublayer& f, Norm kind = Norm::Layer);

// One nn.TransformerEncoderLayer: x = sublayer(SelfAttention), then x = sublayer(FFN), on x (S, d).
// positions = false: without the model's rope or alibi (ordo's --no-pe). masked: as self_attention's.
void encoder_layer(double* x /* (S, d) */, const LayerWeights& w, const Config& c, int S, bool positions = true,
                   const std::vector<bool>& masked = {});

// Watching forward() work: `ordo trace --reference` prints each stage as it is computed here, in
// the same order and with the same names as the fast encoder's observer (engine/ordo/trace.h). While a
// Watch lives, forward() on the same thread hands it every stage (data: rows × cols doubles, row
// stride `stride`; layer and head −1 where they do not apply); with none, nothing is handed out.
using Watcher =
    std::function<void(StageKind kind, int layer, int head, const double* data, int rows, int cols, int stride)>;
class Watch {
 public:
  explicit Watch(Watcher w);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  Watcher watcher_;
};

// A Hugging Face encoder's embedding step (embedding_norm):
//   x_t = LayerNorm(E[id_t] + P[t + position_offset] + T[0])
// P the learned positions (skipped when positions = false), T the token-type table (its row 0, segment
// A, when the model has one), position_offset 0 for BERT and padding_idx + 1 for RoBERTa.
void embed_hf(double* x /* (S, d) */, const int32_t* ids /* (S) */, const Model& m, int S, bool positions);

// The whole encoder: x_t = E[id_t]·√d + PE(t) (or embed_hf's), the layers, the optional final norm.
// Returns the hidden states (S, d). positions = false skips the positional encoding. masked: the
// heads switched off (head_mask in config.h).
// Throws InputError for an id outside the vocabulary or a sequence past a learned position table.
std::vector<double> forward(const Model& m, const std::vector<int32_t>& ids, bool positions = true,
                            const std::vector<HeadIndex>& masked = {});

// The masked-language-model head ("head": "mlm"), on R rows of hidden states:
//   logits_t[v] = Σ_k h_t[k] · E[v][k] + b[v]
// E the token embedding as stored (tied: the input table reused as the output matrix, not scaled
// by √d), b = head.bias. p_t = softmax(logits_t) is the model's guess for the piece at t.
void mlm_logits(double* out /* (R, V) */, const double* h /* (R, d) */, const float* E /* (V, d) */,
                const float* b /* (V) */, int R, int V, int d);

// A model's whole head, the plain twin of engine/head.h's: for a Hugging Face head (head_transform)
//   u_t = LayerNorm(act(h_t·W_hᵀ + b_h)),   logits_t[v] = Σ_k u_t[k] · D[v][k] + b[v]
// (D = E unless the file holds a decoder of its own); for ordo's own head u_t = h_t and D = E.
void mlm_logits(double* out /* (R, V) */, const double* h /* (R, d) */, int R, const Model& m);

}  // namespace ordo::reference
