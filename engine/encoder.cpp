#include <algorithm>
#include <cmath>

#include <ordo/engine/encoder.h>
#include <ordo/errors.h>

#include "common/memory.h"
#include "engine/kernels/parallel.h"
#include "engine/ops.h"

namespace ordo {

void set_num_threads(int n) {
  set_kernel_threads(n);
}

int num_threads() {
  return kernel_threads();
}

uint64_t Encoder::activation_bytes(uint64_t B, uint64_t S) const {
  const Config& c = model_.config();
  const uint64_t T = B * S, d = c.d_model, F = c.d_ff;
  // x, normed, context, sub, the result: 5·T·d; qkv: 3·T·d; ff: T·F; probs: S² per thread; pe: S·d
  return sizeof(float) * (8 * T * d + T * F + uint64_t(kernel_threads()) * S * S + S * d);
}

void Encoder::observe(const EncodeOptions& options, StageKind kind, int layer, int head, const float* data, int rows,
                      int cols, int stride) const {
  if (!options.observe) return;
  const Config& c = model_.config();
  const bool positions = options.positions && c.positional_encoding != PositionalEncoding::None;
  const StageText& text = stage_text(kind, c, positions);
  options.observe({kind, text.name, text.equation, layer, head, data, rows, cols, stride});
}

Hidden Encoder::forward(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options) {
  const Config& c = model_.config();
  const int d = c.d_model;
  Hidden out;
  out.B = static_cast<int>(ids.size());
  out.d = d;
  for (const auto& seq : ids) {
    check_ids(c, seq);
    out.lengths.push_back(static_cast<int>(seq.size()));
    out.S = std::max(out.S, out.lengths.back());
  }
  const int B = out.B, S = out.S;
  if (S == 0) return out;  // no batch, or only empty texts: nothing to compute (every row is padding)
  const uint64_t need = activation_bytes(B, S), limit = machine_memory_bytes() / 2;
  if (need > limit)
    throw InputError("input", "a batch of " + std::to_string(B) + " x " + std::to_string(S) + " tokens needs " +
                                  std::to_string(need >> 20) +
                                  " MiB of working memory, more than half of this machine's " +
                                  std::to_string((2 * limit) >> 20) + " MiB; split it into smaller batches");

  const size_t T = size_t(B) * S;
  s_.x.assign(T * d, 0.0f);
  s_.normed.resize(c.norm_first ? T * d : 0);
  s_.qkv.resize(T * 3 * d);
  s_.context.resize(T * d);
  s_.sub.resize(T * d);
  s_.ff.resize(T * c.d_ff);
  s_.probs.resize(size_t(kernel_threads()) * S * S);

  embed(ids, S, options);
  for (int l = 0; l < c.n_layers; ++l) encoder_layer(l, B, S, out.lengths, options);
  if (c.final_norm) {
    layer_norm(s_.x.data(), s_.x.data(), model_.weights().norm_weight, model_.weights().norm_bias, int(T), d,
               float(c.layer_norm_eps));
    observe(options, StageKind::FinalNorm, -1, -1, s_.x.data(), out.lengths[0], d, d);
  }

  out.data.assign(T * d, 0.0f);
  for (int b = 0; b < B; ++b)
    std::copy_n(s_.x.data() + size_t(b) * S * d, size_t(out.lengths[b]) * d, out.data.data() + size_t(b) * S * d);
  return out;
}

// x_t = E[id_t] · √d + PE(t)         (or + P[t] for learned positions; nothing for "none")
void Encoder::embed(const std::vector<std::vector<int32_t>>& ids, int S, const EncodeOptions& options) {
  const Config& c = model_.config();
  const Weights& w = model_.weights();
  const int d = c.d_model;
  const float scale = c.scale_embedding ? static_cast<float>(std::sqrt(double(d))) : 1.0f;
  const bool sinusoidal = options.positions && c.positional_encoding == PositionalEncoding::Sinusoidal;
  const bool learned = options.positions && c.positional_encoding == PositionalEncoding::Learned;

  const int cached = static_cast<int>(s_.pe.size() / std::max(d, 1));
  if (sinusoidal && cached < S) {  // the table only grows; earlier rows never change
    s_.pe.resize(size_t(S) * d);
    sinusoidal_positions(s_.pe.data() + size_t(cached) * d, S - cached, d, c.pe_layout, c.pe_base, cached);
  }
  const float* positions = sinusoidal ? s_.pe.data() : learned ? w.position_embedding : nullptr;

  if (options.observe) {  // the steps the loop below fuses, one at a time, for the first sequence
    const int L = static_cast<int>(ids[0].size());
    std::vector<float> e(size_t(L) * d);  // (L, d)
    for (int t = 0; t < L; ++t) std::copy_n(w.embedding + size_t(ids[0][t]) * d, d, e.data() + size_t(t) * d);
    observe(options, StageKind::Embedding, -1, -1, e.data(), L, d, d);
    if (c.scale_embedding) {
      for (float& v : e) v *= scale;
      observe(options, StageKind::ScaledEmbedding, -1, -1, e.data(), L, d, d);
    }
    if (positions)
      observe(options, sinusoidal ? StageKind::SinusoidalPositions : StageKind::LearnedPositions, -1, -1, positions, L,
              d, d);
  }

  for (size_t b = 0; b < ids.size(); ++b)
    for (size_t t = 0; t < ids[b].size(); ++t) {
      const float* e = w.embedding + size_t(ids[b][t]) * d;
      float* x = s_.x.data() + (b * S + t) * d;
      for (int j = 0; j < d; ++j) x[j] = e[j] * scale + (positions ? positions[t * d + j] : 0.0f);
    }
  observe(options, StageKind::Input, -1, -1, s_.x.data(), int(ids[0].size()), d, d);
}

void Encoder::sublayer(int T, const float* gamma, const float* beta, const std::function<void(const float* in)>& f) {
  const Config& c = model_.config();
  const int d = c.d_model;
  const float eps = static_cast<float>(c.layer_norm_eps);
  float* x = s_.x.data();
  if (c.norm_first) {  // pre-LN: x = x + f(LayerNorm(x))
    layer_norm(s_.normed.data(), x, gamma, beta, T, d, eps);
    f(s_.normed.data());
    add_residual(x, s_.sub.data(), T, d);
  } else {  // post-LN: x = LayerNorm(x + f(x)), the sum and the norm in one pass
    f(x);
    add_layer_norm(x, s_.sub.data(), gamma, beta, T, d, eps);
  }
}

void Encoder::encoder_layer(int l, int B, int S, const std::vector<int>& lengths, const EncodeOptions& options) {
  const Config& c = model_.config();
  const LayerWeights& w = model_.weights().layers[l];
  const int d = c.d_model, F = c.d_ff, T = B * S, L0 = lengths[0];

  sublayer(T, w.norm1_weight, w.norm1_bias, [&](const float* in) { self_attention(w, in, l, B, S, lengths, options); });
  observe(options, StageKind::AttentionResidual, l, -1, s_.x.data(), L0, d, d);

  sublayer(T, w.norm2_weight, w.norm2_bias, [&](const float* in) {  // FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2
    linear(s_.ff.data(), in, w.linear1_weight, w.linear1_bias, T, d, F);
    activate(s_.ff.data(), size_t(T) * F, c.activation);
    observe(options, StageKind::FeedForwardHidden, l, -1, s_.ff.data(), L0, F, F);
    linear(s_.sub.data(), s_.ff.data(), w.linear2_weight, w.linear2_bias, T, F, d);
  });
  observe(options, StageKind::FeedForwardResidual, l, -1, s_.x.data(), L0, d, d);
}

// MultiHead(x) = Concat(head_1..head_h)·Woᵀ + bo,  head_i = Attention(x·Wqᵢᵀ, x·Wkᵢᵀ, x·Wvᵢᵀ)   [§3.2.2]
// One GEMM makes q | k | v for every token; each head then reads its dh columns in place.
void Encoder::self_attention(const LayerWeights& w, const float* in, int layer, int B, int S,
                             const std::vector<int>& lengths, const EncodeOptions& options) {
  const Config& c = model_.config();
  const int d = c.d_model, h = c.n_heads, dh = c.head_dim(), T = B * S;
  linear(s_.qkv.data(), in, w.in_proj_weight, w.in_proj_bias, T, d, 3 * d);
  observe(options, StageKind::Qkv, layer, -1, s_.qkv.data(), lengths[0], 3 * d, 3 * d);

  // One task per (sequence, head); each thread has its own (S, S) block of probs.
  auto head = [&](int task, int thread) {
    const int b = task / h, i = task % h, L = lengths[b];  // keys past L are padding: never attended to
    const float* q = s_.qkv.data() + size_t(b) * S * 3 * d + size_t(i) * dh;
    float* out = s_.context.data() + size_t(b) * S * d + size_t(i) * dh;
    float* probs = s_.probs.data() + size_t(thread) * S * S;
    attention_head(out, q, q + d, q + 2 * d, probs, L, dh, 3 * d, d);
    if (b == 0) observe(options, StageKind::AttentionWeights, layer, i, probs, L, L, L);
  };
  if (options.observe)  // in order, for the observer
    for (int task = 0; task < B * h; ++task) head(task, 0);
  else
    parallel_for(B * h, head);
  for (int b = 0; b < B; ++b)
    std::fill(s_.context.data() + (size_t(b) * S + lengths[b]) * d, s_.context.data() + size_t(b + 1) * S * d, 0.0f);
  observe(options, StageKind::HeadsConcatenated, layer, -1, s_.context.data(), lengths[0], d, d);
  linear(s_.sub.data(), s_.context.data(), w.out_proj_weight, w.out_proj_bias, T, d, d);
  observe(options, StageKind::OutputProjection, layer, -1, s_.sub.data(), lengths[0], d, d);
}

}  // namespace ordo
