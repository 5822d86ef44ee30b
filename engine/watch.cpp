// The watched pass: one sequence through the fast encoder's own steps and kernels (encoder.cpp), one
// step at a time, each stage handed to the caller's observer as it is computed. forward() fuses what
// this file takes apart (the embedding's sum, q·kᵀ with its scaling and bias, blocks of query rows)
// and never stops to hand anything out; this pass does, for `ordo trace`, `attention`, the page and
// Python's trace. Its stages are the fast encoder's floats, so what a user sees is what encode runs.
#include <algorithm>
#include <cmath>

#include <ordo/engine/encoder.h>

#include "engine/kernels/blas.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/ops.h"
#include "engine/reference.h"

namespace ordo {

void Encoder::hand_out(const EncodeOptions& options, StageKind kind, int layer, int head, const float* data, int rows,
                       int cols, int stride) const {
  const Config& c = model_.config();
  const bool positions = options.positions && c.positional_encoding != PositionalEncoding::None;
  const StageText& text = stage_text(kind, c, positions);  // the equation as this run computes it
  options.observe({kind, text.name, text.equation, layer, head, data, rows, cols, stride});
}

// One head's inside before its softmax: its q, k and v columns, and the scores s = q·kᵀ and s/√dh
// (with ALiBi's bias, or T5's by offset), in plain loops: attention_head fuses them into one product.
void Encoder::hand_out_head_inputs(const EncodeOptions& options, int layer, int head, const float* q, int L, int dh,
                                   int ld, float alibi_before, float alibi_after, const float* relative) const {
  const int A = model_.config().attention_width();  // k and v start A and 2A columns after q
  hand_out(options, StageKind::HeadQuery, layer, head, q, L, dh, ld);
  hand_out(options, StageKind::HeadKey, layer, head, q + A, L, dh, ld);
  hand_out(options, StageKind::HeadValue, layer, head, q + 2 * A, L, dh, ld);
  std::vector<float> scores(size_t(L) * L);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) {
      float sum = 0.0f;
      for (int e = 0; e < dh; ++e) sum += q[size_t(i) * ld + e] * q[size_t(j) * ld + A + e];
      scores[size_t(i) * L + j] = sum;
    }
  hand_out(options, StageKind::AttentionScores, layer, head, scores.data(), L, L, L);
  const float scale = model_.config().scale_attention ? 1.0f / std::sqrt(static_cast<float>(dh)) : 1.0f;
  for (float& v : scores) v *= scale;
  if (alibi_before > 0.0f || alibi_after > 0.0f) {  // as attention_head adds it
    std::vector<float> bias(size_t(L) * L);
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) bias[size_t(i) * L + j] = reference::alibi_bias(i, j, alibi_before, alibi_after);
    hand_out(options, StageKind::AlibiBias, layer, head, bias.data(), L, L, L);
    for (size_t n = 0; n < scores.size(); ++n) scores[n] += bias[n];
  } else if (relative) {  // as attention_head adds it: relative[j − i]
    std::vector<float> bias(size_t(L) * L);
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) bias[size_t(i) * L + j] = relative[j - i];
    hand_out(options, StageKind::AlibiBias, layer, head, bias.data(), L, L, L);
    for (size_t n = 0; n < scores.size(); ++n) scores[n] += bias[n];
  }
  hand_out(options, StageKind::ScaledScores, layer, head, scores.data(), L, L, L);
}

Hidden Encoder::watch(const std::vector<int32_t>& ids, const EncodeOptions& options) {
  const Config& c = model_.config();
  const Weights& weights = model_.weights();
  const int d = c.d_model, h = c.n_heads, dh = c.head_dim(), A = c.attention_width(), F = c.d_ff;
  const int L = static_cast<int>(ids.size());
  Hidden out = shape({ids}, options);
  if (L == 0 || !options.observe) return L == 0 ? out : forward({ids}, options);
  const PassThreads threads;  // the thread count stays as it is now until this pass ends
  Pass pass(*this);
  prepare(pass, 1, L, true, options);
  RunState& s = *pass.state;
  auto show = [&](StageKind kind, int layer, int head, const float* data, int cols, int stride) {
    hand_out(options, kind, layer, head, data, L, cols, stride);
  };

  // x_t = E[id_t]·√d + PE(t), its parts first
  embed(s, {ids}, L, options);
  std::vector<float> e(size_t(L) * d);  // (L, d)
  for (int t = 0; t < L; ++t) std::copy_n(weights.embedding + size_t(ids[t]) * d, d, e.data() + size_t(t) * d);
  show(StageKind::Embedding, -1, -1, e.data(), d, d);
  if (c.scale_embedding) {
    const float scale = static_cast<float>(std::sqrt(double(d)));
    for (float& v : e) v *= scale;
    show(StageKind::ScaledEmbedding, -1, -1, e.data(), d, d);
  }
  if (const float* p = positions(s, L, options))
    show(c.positional_encoding == PositionalEncoding::Sinusoidal ? StageKind::SinusoidalPositions
                                                                 : StageKind::LearnedPositions,
         -1, -1, p, d, d);
  show(StageKind::Input, -1, -1, s.x.data(), d, d);

  const PositionalEncoding pe = options.positions ? c.positional_encoding : PositionalEncoding::None;
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = weights.layers[l];
    sublayer(s, L, w.norm1_weight, w.norm1_bias, [&](const float* in) {
      project(s, Product::InProjection, l, s.qkv.data(), in, L);
      show(StageKind::Qkv, l, -1, s.qkv.data(), 3 * A, 3 * A);
      if (pe == PositionalEncoding::Rope) {
        rotate(s, 1, {L});
        show(StageKind::RotatedQk, l, -1, s.qkv.data(), 3 * A, 3 * A);
      }
      if (!have_gemm()) blas_check_room(1);  // attention_head's cblas_sgemm, on this thread
      for (int i = 0; i < h; ++i) {          // in order, each head's whole (L, L) weights at once
        const float* q = s.qkv.data() + size_t(i) * dh;
        float* head = s.context.data() + size_t(i) * dh;
        const reference::AlibiSlopes m = reference::alibi_head_slopes(pe, h, i, c.alibi_slopes);
        const float before = static_cast<float>(m.before), after = static_cast<float>(m.after);
        const float* relative = relative_bias(s, pe, i, L);  // t5-buckets
        hand_out_head_inputs(options, l, i, q, L, dh, 3 * A, before, after, relative);
        attention_head(head, q, q + A, q + 2 * A, s.probs.data(), L, dh, 3 * A, A, L, before, after, relative,
                       c.scale_attention);
        if (s.masked[size_t(l) * h + i])  // switched off: its weights are shown, its output is zeros
          for (int t = 0; t < L; ++t) std::fill_n(head + size_t(t) * A, dh, 0.0f);
        show(StageKind::AttentionWeights, l, i, s.probs.data(), L, L);
        show(StageKind::HeadOutput, l, i, head, dh, A);
      }
      show(StageKind::HeadsConcatenated, l, -1, s.context.data(), A, A);
      project(s, Product::OutProjection, l, s.sub.data(), s.context.data(), L);
      show(StageKind::OutputProjection, l, -1, s.sub.data(), d, d);
    });
    show(StageKind::AttentionResidual, l, -1, s.x.data(), d, d);
    sublayer(s, L, w.norm2_weight, w.norm2_bias, [&](const float* in) {
      project(s, Product::Linear1, l, s.ff.data(), in, L);
      activation(s.ff.data(), size_t(L) * F, c.activation);
      if (c.gated_ffn) {  // ⊙ x·Vᵀ
        project(s, Product::Linear1V, l, s.ff_v.data(), in, L);
        for (size_t n = 0; n < size_t(L) * F; ++n) s.ff[n] *= s.ff_v[n];
      }
      show(StageKind::FeedForwardHidden, l, -1, s.ff.data(), F, F);
      project(s, Product::Linear2, l, s.sub.data(), s.ff.data(), L);
    });
    show(StageKind::FeedForwardResidual, l, -1, s.x.data(), d, d);
  }
  if (c.final_norm) {
    norm(s.x.data(), s.x.data(), weights.norm_weight, weights.norm_bias, L);
    show(StageKind::FinalNorm, -1, -1, s.x.data(), d, d);
  }
  out.data.assign(s.x.begin(), s.x.begin() + size_t(L) * d);
  return out;
}

}  // namespace ordo
