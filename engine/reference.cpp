#include "engine/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ordo::reference {

// Watching (reference.h): the watcher of this thread, and where forward() is now.
namespace {
thread_local const Watcher* watcher = nullptr;
thread_local int layer_now = -1, head_now = -1;

void see(StageKind kind, const double* data, int rows, int cols, int stride) {
  if (watcher) (*watcher)(kind, layer_now, head_now, data, rows, cols, stride);
}
}  // namespace

Watch::Watch(Watcher w) : watcher_(std::move(w)) {
  watcher = &watcher_;
}

Watch::~Watch() {
  watcher = nullptr;
}

// x_t = E[id_t] · scale
void embed(double* x, const int32_t* ids, const float* E, int S, int d, double scale) {
  for (int t = 0; t < S; ++t)
    for (int j = 0; j < d; ++j) x[size_t(t) * d + j] = E[size_t(ids[t]) * d + j] * scale;
}

// PE(t, 2i) = sin(t / base^(2i/d)),  PE(t, 2i+1) = cos(t / base^(2i/d))
void sinusoidal_positions(double* pe, int S, int d, PeLayout layout, double base, int first_position) {
  const int pairs = (d + 1) / 2;  // ⌈d/2⌉ frequencies; an odd d has one sine without its cosine
  for (int s = 0; s < S; ++s) {
    const double t = static_cast<double>(first_position + s);
    double* row = pe + static_cast<size_t>(s) * d;
    for (int i = 0; i < pairs; ++i) {
      const double angle = t / std::pow(base, 2.0 * i / d);  // t / base^(2i/d)
      const int sin_dim = layout == PeLayout::Interleaved ? 2 * i : i;
      const int cos_dim = layout == PeLayout::Interleaved ? 2 * i + 1 : pairs + i;
      row[sin_dim] = std::sin(angle);
      if (cos_dim < d) row[cos_dim] = std::cos(angle);
    }
  }
}

// y = x·Wᵀ + b
void linear(double* y, const double* x, const float* w, const float* b, int M, int K, int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += x[size_t(m) * K + k] * w[size_t(n) * K + k];
      y[size_t(m) * N + n] = acc;
    }
}

// softmax(z)_j = exp(z_j − max z) / Σ_k exp(z_k − max z)
void softmax(double* z, int n) {
  const double max = *std::max_element(z, z + n);  // exp(z − max) ≤ 1: no overflow
  double sum = 0.0;
  for (int j = 0; j < n; ++j) sum += (z[j] = std::exp(z[j] - max));
  for (int j = 0; j < n; ++j) z[j] /= sum;
}

// Attention(Q, K, V) = softmax(Q·Kᵀ / √dh + B)·V, B the ALiBi bias or the given one (0 without either);
// unscaled: softmax(Q·Kᵀ + B)·V
void attention_head(double* out, const double* q, const double* k, const double* v, double* probs, int L, int dh,
                    int ld_qkv, int ld_out, double alibi_before, double alibi_after, const double* bias, bool scaled) {
  see(StageKind::HeadQuery, q, L, dh, ld_qkv);
  see(StageKind::HeadKey, k, L, dh, ld_qkv);
  see(StageKind::HeadValue, v, L, dh, ld_qkv);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) {  // s_ij = q_i · k_j
      double dot = 0.0;
      for (int c = 0; c < dh; ++c) dot += q[size_t(i) * ld_qkv + c] * k[size_t(j) * ld_qkv + c];
      probs[size_t(i) * L + j] = dot;
    }
  see(StageKind::AttentionScores, probs, L, L, L);
  const double scale = scaled ? 1.0 / std::sqrt(static_cast<double>(dh)) : 1.0;
  for (size_t n = 0; n < size_t(L) * L; ++n) probs[n] *= scale;  // s / √dh
  if (alibi_before > 0 || alibi_after > 0) {
    std::vector<double> bias(size_t(L) * L);
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) bias[size_t(i) * L + j] = alibi_bias(i, j, alibi_before, alibi_after);
    see(StageKind::AlibiBias, bias.data(), L, L, L);
    residual(probs, bias.data(), bias.size());
  } else if (bias) {
    see(StageKind::AlibiBias, bias, L, L, L);
    residual(probs, bias, size_t(L) * L);
  }
  see(StageKind::ScaledScores, probs, L, L, L);
  for (int i = 0; i < L; ++i) softmax(probs + size_t(i) * L, L);  // each query's weights sum to 1
  see(StageKind::AttentionWeights, probs, L, L, L);
  for (int i = 0; i < L; ++i)
    for (int c = 0; c < dh; ++c) {  // Σ_j p_ij · v_j
      double acc = 0.0;
      for (int j = 0; j < L; ++j) acc += probs[size_t(i) * L + j] * v[size_t(j) * ld_qkv + c];
      out[size_t(i) * ld_out + c] = acc;
    }
  see(StageKind::HeadOutput, out, L, dh, ld_out);
}

// m_i = 2^(−8(i+1)/h) for h a power of two
std::vector<double> alibi_slopes(int h) {
  auto geometric = [](int n) {  // 2^(−8k/n), k = 1..n
    std::vector<double> m;
    for (int k = 1; k <= n; ++k) m.push_back(std::pow(2.0, -8.0 * k / n));
    return m;
  };
  int below = 1;
  while (below * 2 <= h) below *= 2;
  std::vector<double> m = geometric(below), above = geometric(2 * below);
  for (size_t k = 0; int(m.size()) < h; k += 2) m.push_back(above[k]);
  return m;
}

AlibiSlopes alibi_head_slopes(PositionalEncoding p, int h, int head, const std::vector<double>& slopes) {
  if (p != PositionalEncoding::Alibi && p != PositionalEncoding::AlibiSymmetric) return {};
  const std::vector<double> m = slopes.empty() ? alibi_slopes(h) : slopes;
  if (p == PositionalEncoding::AlibiSymmetric) return {m[head], m[head]};
  const double slope = slopes.empty() ? m[head - head % 2] : m[head], unseen = std::numeric_limits<double>::infinity();
  return head % 2 == 0 ? AlibiSlopes{slope, unseen} : AlibiSlopes{unseen, slope};
}

// n = |j − i|:  n                                                      for n < exact
//               min(half − 1, exact + ⌊(half − exact)·ln(n/exact)/ln(max_distance/exact)⌋)  else,
// plus half for a key after the query
int relative_bucket(int offset, int num_buckets, int max_distance) {
  const int half = num_buckets / 2, exact = half / 2, n = std::abs(offset);
  const int side = offset > 0 ? half : 0;
  if (n < exact) return side + n;
  const double spaced = (half - exact) * std::log(double(n) / exact) / std::log(double(max_distance) / exact);
  return side + std::min(half - 1, exact + int(std::floor(spaced + 1e-9)));
}

// x'_2i = x_2i·cos(tθ_i) − x_2i+1·sin(tθ_i),  x'_2i+1 = x_2i·sin(tθ_i) + x_2i+1·cos(tθ_i),  θ_i = base^(−2i/dh)
void rope(double* x, int S, int ld, int h, int dh, double base, int first_position) {
  for (int s = 0; s < S; ++s)
    for (int head = 0; head < h; ++head)
      for (int i = 0; i < dh / 2; ++i) {
        const double angle = (first_position + s) * std::pow(base, -2.0 * i / dh);  // t·θ_i
        double* pair = x + size_t(s) * ld + size_t(head) * dh + 2 * i;
        const double a = pair[0], b = pair[1];
        pair[0] = a * std::cos(angle) - b * std::sin(angle);
        pair[1] = a * std::sin(angle) + b * std::cos(angle);
      }
}

// MultiHead(x) = Concat(head_1 .. head_h)·W_oᵀ + b_o,  head_i = Attention(x·W_qᵢᵀ, x·W_kᵢᵀ, x·W_vᵢᵀ)
void self_attention(double* out, const double* x, const LayerWeights& w, const Config& c, int S,
                    PositionalEncoding positions, const std::vector<bool>& masked) {
  const int d = c.d_model, h = c.n_heads, dh = c.head_dim(), A = c.attention_width();  // A = h·dh
  const int buckets = c.relative_buckets, max_distance = c.relative_max_distance;
  std::vector<double> qkv(size_t(S) * 3 * A), concat(size_t(S) * A), probs(size_t(S) * S);
  linear(qkv.data(), x, w.in_proj_weight, w.in_proj_bias, S, d, 3 * A);  // [q k v] = x·W_inᵀ + b_in
  see(StageKind::Qkv, qkv.data(), S, 3 * A, 3 * A);
  if (positions == PositionalEncoding::Rope) {  // q and k turned by their positions' angles; v is not
    rope(qkv.data(), S, 3 * A, h, dh, c.pe_base);
    rope(qkv.data() + A, S, 3 * A, h, dh, c.pe_base);
    see(StageKind::RotatedQk, qkv.data(), S, 3 * A, 3 * A);
  }
  for (int i = 0; i < h; ++i) {  // head i reads columns [i·dh, (i+1)·dh) of q, k and v
    const double* q = qkv.data() + size_t(i) * dh;
    head_now = i;
    const AlibiSlopes m = alibi_head_slopes(positions, h, i, c.alibi_slopes);
    std::vector<double> bias;  // t5-buckets and MPNet: b_jk = W[i, bucket(k − j)], query j, key k
    if (positions != PositionalEncoding::None && c.bucket_bias()) {
      bias.resize(size_t(S) * S);
      for (int j = 0; j < S; ++j)
        for (int k = 0; k < S; ++k)
          bias[size_t(j) * S + k] =
              w.position_bias[size_t(i) * buckets + relative_bucket(k - j, buckets, max_distance)];
    }
    attention_head(concat.data() + size_t(i) * dh, q, q + A, q + 2 * A, probs.data(), S, dh, 3 * A, A, m.before,
                   m.after, bias.empty() ? nullptr : bias.data(), c.scale_attention);
    if (!masked.empty() && masked[i])  // switched off: head_i = 0
      for (int t = 0; t < S; ++t)
        for (int e = 0; e < dh; ++e) concat[size_t(t) * A + size_t(i) * dh + e] = 0.0;
  }
  head_now = -1;
  see(StageKind::HeadsConcatenated, concat.data(), S, A, A);
  linear(out, concat.data(), w.out_proj_weight, w.out_proj_bias, S, A, d);
  see(StageKind::OutputProjection, out, S, d, d);
}

// LayerNorm(x) = (x − mean(x)) / √(var(x) + eps) · γ + β
void layer_norm(double* y, const double* x, const float* gamma, const float* beta, int M, int d, double eps) {
  for (int m = 0; m < M; ++m) {
    const double* xr = x + size_t(m) * d;
    double* yr = y + size_t(m) * d;
    double mean = 0.0, var = 0.0;
    for (int j = 0; j < d; ++j) mean += xr[j] / d;
    for (int j = 0; j < d; ++j) var += (xr[j] - mean) * (xr[j] - mean) / d;
    for (int j = 0; j < d; ++j) yr[j] = (xr[j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
}

// RMSNorm(x) = x / √(mean(x²) + eps) · γ
void rms_norm(double* y, const double* x, const float* gamma, int M, int d, double eps) {
  for (int m = 0; m < M; ++m) {
    const double* xr = x + size_t(m) * d;
    double* yr = y + size_t(m) * d;
    double square = 0.0;
    for (int j = 0; j < d; ++j) square += xr[j] * xr[j] / d;
    for (int j = 0; j < d; ++j) yr[j] = xr[j] / std::sqrt(square + eps) * gamma[j];
  }
}

void norm(double* y, const double* x, const float* gamma, const float* beta, int M, int d, double eps, Norm kind) {
  if (kind == Norm::RMS)
    rms_norm(y, x, gamma, M, d, eps);
  else
    layer_norm(y, x, gamma, beta, M, d, eps);
}

// ReLU(x) = max(0, x);  GELU(x) = ½x·(1 + erf(x/√2));  GELUTanh(x) = ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
void activation(double* x, size_t n, Activation act) {
  for (size_t i = 0; i < n; ++i)
    x[i] = act == Activation::ReLU ? std::max(x[i], 0.0)
           : act == Activation::GELUTanh
               ? 0.5 * x[i] * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i])))
               : 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
}

// x = x + r
void residual(double* x, const double* r, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += r[i];
}

// x_t = x_t + p_t
void add_positions(double* x, const double* p, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += p[i];
}

// FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2;  gated: FFN(x) = (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ
void feed_forward(double* out, const double* x, const LayerWeights& w, int S, int d, int F, Activation act) {
  std::vector<double> hidden(size_t(S) * F);
  linear(hidden.data(), x, w.linear1_weight, w.linear1_bias, S, d, F);  // x·W1ᵀ + b1
  activation(hidden.data(), hidden.size(), act);
  if (w.linear1_v_weight) {  // ⊙ x·Vᵀ
    std::vector<double> gate(hidden.size());
    linear(gate.data(), x, w.linear1_v_weight, nullptr, S, d, F);
    for (size_t n = 0; n < hidden.size(); ++n) hidden[n] *= gate[n];
  }
  see(StageKind::FeedForwardHidden, hidden.data(), S, F, F);
  linear(out, hidden.data(), w.linear2_weight, w.linear2_bias, S, F, d);  // ·W2ᵀ + b2
}

// post-LN: x = LayerNorm(x + f(x));  pre-LN: x = x + f(LayerNorm(x))
void sublayer(double* x, int S, int d, bool norm_first, const float* gamma, const float* beta, double eps,
              const Sublayer& f, Norm kind) {
  const size_t n = size_t(S) * d;
  std::vector<double> out(n);
  if (norm_first) {  // pre-LN: x = x + f(LayerNorm(x))
    std::vector<double> normed(n);
    norm(normed.data(), x, gamma, beta, S, d, eps, kind);
    f(out.data(), normed.data());
    residual(x, out.data(), n);
  } else {  // post-LN: x = LayerNorm(x + f(x))
    f(out.data(), x);
    residual(x, out.data(), n);
    norm(x, x, gamma, beta, S, d, eps, kind);
  }
}

// x = sublayer(SelfAttention, x);  x = sublayer(FFN, x)
void encoder_layer(double* x, const LayerWeights& w, const Config& c, int S, bool positions,
                   const std::vector<bool>& masked) {
  const int d = c.d_model;
  const PositionalEncoding inside = positions ? c.positional_encoding : PositionalEncoding::None;
  sublayer(
      x, S, d, c.norm_first, w.norm1_weight, w.norm1_bias, c.layer_norm_eps,
      [&](double* out, const double* in) { self_attention(out, in, w, c, S, inside, masked); }, c.norm);
  see(StageKind::AttentionResidual, x, S, d, d);
  sublayer(
      x, S, d, c.norm_first, w.norm2_weight, w.norm2_bias, c.layer_norm_eps,
      [&](double* out, const double* in) { feed_forward(out, in, w, S, d, c.d_ff, c.activation); }, c.norm);
  see(StageKind::FeedForwardResidual, x, S, d, d);
}

// x_t = LayerNorm(E[id_t] + P[t + position_offset] + T[0])
// RoBERTa and MPNet (position_offset = padding_idx + 1) number only the tokens that are not <pad>: token t at
// padding_idx + (how many of ids 0..t are not padding_idx), a <pad> at padding_idx itself, as
// transformers' create_position_ids_from_input_ids; without a <pad> in the text that is t + offset.
void embed_hf(double* x, const int32_t* ids, const Model& m, int S, bool positions) {
  const Config& c = m.config();
  const Weights& w = m.weights();
  const int d = c.d_model;
  embed(x, ids, w.embedding, S, d, 1.0);
  see(StageKind::Embedding, x, S, d, d);
  if (positions) {
    std::vector<double> p(size_t(S) * d);
    const int pad = c.positions_skip_pads() ? c.position_offset - 1 : -1;
    for (int t = 0, counted = 0; t < S; ++t) {
      const int row = ids[t] == pad ? pad : c.position_offset + counted++;
      std::copy_n(w.position_embedding + size_t(row) * d, d, p.begin() + size_t(t) * d);
    }
    see(StageKind::LearnedPositions, p.data(), S, d, d);
    add_positions(x, p.data(), p.size());
  }
  if (w.token_type_embedding)
    for (int t = 0; t < S; ++t)
      for (int j = 0; j < d; ++j) x[size_t(t) * d + j] += w.token_type_embedding[j];
  layer_norm(x, x, w.embedding_norm_weight, w.embedding_norm_bias, S, d, c.layer_norm_eps);
}

// x_t = E[id_t]·√d + PE(t) (a Hugging Face encoder's normed sum), then the layers, then the optional
// final LayerNorm
std::vector<double> forward(const Model& m, const std::vector<int32_t>& ids, bool positions,
                            const std::vector<HeadIndex>& masked) {
  const Config& c = m.config();
  const Weights& w = m.weights();
  const int S = int(ids.size()), d = c.d_model;
  check_ids(c, ids);
  const std::vector<bool> off = head_mask(c, masked);  // (n_layers · n_heads)
  std::vector<double> x(size_t(S) * d);
  layer_now = head_now = -1;
  if (c.embedding_norm) {
    // A Hugging Face encoder: x_t = LayerNorm(E[id_t] + P[t + offset] + T[0])
    embed_hf(x.data(), ids.data(), m, S, positions);
  } else {
    // x_t = E[id_t]·√d + PE(t)   (or + P[t], a learned table; or nothing: none, and rope and alibi,
    // which act in each layer's attention instead)
    std::vector<double> pe(size_t(S) * d);
    embed(x.data(), ids.data(), w.embedding, S, d, 1.0);
    see(StageKind::Embedding, x.data(), S, d, d);
    if (c.scale_embedding) {
      for (double& v : x) v *= std::sqrt(double(d));
      see(StageKind::ScaledEmbedding, x.data(), S, d, d);
    }
    if (positions && c.positional_encoding == PositionalEncoding::Sinusoidal) {
      sinusoidal_positions(pe.data(), S, d, c.pe_layout, c.pe_base);
      see(StageKind::SinusoidalPositions, pe.data(), S, d, d);
      add_positions(x.data(), pe.data(), pe.size());
    } else if (positions && c.positional_encoding == PositionalEncoding::Learned) {
      std::copy_n(w.position_embedding, pe.size(), pe.begin());
      see(StageKind::LearnedPositions, pe.data(), S, d, d);
      add_positions(x.data(), pe.data(), pe.size());
    }
  }
  see(StageKind::Input, x.data(), S, d, d);
  for (int l = 0; l < c.n_layers; ++l) {
    layer_now = l;
    encoder_layer(x.data(), w.layers[l], c, S, positions,
                  std::vector<bool>(off.begin() + size_t(l) * c.n_heads, off.begin() + size_t(l + 1) * c.n_heads));
  }
  layer_now = -1;
  if (c.final_norm) {
    norm(x.data(), x.data(), w.norm_weight, w.norm_bias, S, d, c.layer_norm_eps, c.norm);
    see(StageKind::FinalNorm, x.data(), S, d, d);
  }
  return x;
}

// logits_t[v] = Σ_k h_t[k] · E[v][k] + b[v]
void mlm_logits(double* out, const double* h, const float* E, const float* b, int R, int V, int d) {
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      double z = b[v];
      for (int k = 0; k < d; ++k) z += h[size_t(r) * d + k] * E[size_t(v) * d + k];
      out[size_t(r) * V + v] = z;
    }
}

// u_t = LayerNorm(act(h_t·W_hᵀ + b_h)) for a Hugging Face head, else u_t = h_t; then logits_t = u_t·Dᵀ + b
void mlm_logits(double* out, const double* h, int R, const Model& m) {
  const Config& c = m.config();
  const Weights& w = m.weights();
  const int d = c.d_model;
  std::vector<double> u(h, h + size_t(R) * d);
  if (c.head_transform) {
    linear(u.data(), h, w.head_dense_weight, w.head_dense_bias, R, d, d);
    activation(u.data(), u.size(), c.head_activation);
    layer_norm(u.data(), u.data(), w.head_norm_weight, w.head_norm_bias, R, d, c.layer_norm_eps);
  }
  mlm_logits(out, u.data(), w.head_decoder, w.head_bias, R, c.vocab_size, d);
}

}  // namespace ordo::reference
