// ordo: the steps of a forward pass a caller can watch (EncodeOptions::observe; `ordo trace` and
// `ordo attention` print them), as a typed list with one table of names and equations, and the
// options of a pass. Public: <ordo/trace.h>.
#pragma once

#include <functional>

#include <ordo/config.h>

namespace ordo {

// In the order the encoder reaches them. Before the layers: Embedding, ScaledEmbedding (when the
// config scales), SinusoidalPositions or LearnedPositions (when positions are on), Input. Per layer:
// Qkv, then per head its inside (HeadQuery, HeadKey, HeadValue, AttentionScores, ScaledScores,
// AttentionWeights, HeadOutput), HeadsConcatenated, OutputProjection, AttentionResidual,
// FeedForwardHidden, FeedForwardResidual. After them: FinalNorm (when the config has one).
enum class StageKind {
  Embedding,
  ScaledEmbedding,
  SinusoidalPositions,
  LearnedPositions,
  Input,
  Qkv,
  RotatedQk,
  HeadQuery,
  HeadKey,
  HeadValue,
  AttentionScores,
  AlibiBias,
  ScaledScores,
  AttentionWeights,
  HeadOutput,
  HeadsConcatenated,
  OutputProjection,
  AttentionResidual,
  FeedForwardHidden,
  FeedForwardResidual,
  FinalNorm,
};

// A stage's name and equation. Where a model's options change the equation, the variant picks
// the row: Input, 1 for the √d scale + 2 for positions; ScaledScores and AttentionWeights, 1 for
// alibi and t5-buckets, 2 for alibi-symmetric, 3 and 4 for a T5 encoder's unscaled scores (4 with its
// bias); AlibiBias (the bias of any scheme that adds one to the scores), 1 for alibi-symmetric, 2 for
// t5-buckets; the residual stages, 1 for pre-LN; FeedForwardHidden, 1 for GELU, 2 for its tanh form, 3
// more for the gated form; Input, 4 and 6 for a Hugging Face encoder's normed embedding sum (6 with
// positions); FinalNorm, 1 for RMSNorm.
struct StageText {
  StageKind kind;
  int variant;
  const char* name;
  const char* equation;
};

inline constexpr StageText kStageTable[] = {
    {StageKind::Embedding, 0, "embedding rows", "e_t = E[id_t]   (row id_t of embedding.weight, (V, d))"},
    {StageKind::ScaledEmbedding, 0, "after x sqrt(d)", "e_t * sqrt(d)"},
    {StageKind::SinusoidalPositions, 0, "positional encoding",
     "PE(t,2i) = sin(t / base^(2i/d)), PE(t,2i+1) = cos(t / base^(2i/d))"},
    {StageKind::LearnedPositions, 0, "learned positions", "P[t]"},
    {StageKind::Input, 0, "input", "x_t = E[id_t]"},
    {StageKind::Input, 1, "input", "x_t = E[id_t] * sqrt(d)"},
    {StageKind::Input, 2, "input", "x_t = E[id_t] + PE(t)"},
    {StageKind::Input, 3, "input", "x_t = E[id_t] * sqrt(d) + PE(t)"},
    {StageKind::Input, 4, "input", "x_t = LayerNorm(E[id_t] + T[0])"},
    {StageKind::Input, 6, "input", "x_t = LayerNorm(E[id_t] + P[t + offset] + T[0])"},
    {StageKind::Qkv, 0, "q | k | v", "[q k v] = x W_in^T + b_in"},
    {StageKind::RotatedQk, 0, "q and k rotated (rope)",
     "each head's (q_2i, q_2i+1) and (k_2i, k_2i+1) turned by the angle t*theta_i, theta_i = base^(-2i/dh)"},
    {StageKind::HeadQuery, 0, "query", "q_h = columns [h*dh, (h+1)*dh) of q"},
    {StageKind::HeadKey, 0, "key", "k_h = columns [h*dh, (h+1)*dh) of k"},
    {StageKind::HeadValue, 0, "value", "v_h = columns [h*dh, (h+1)*dh) of v"},
    {StageKind::AttentionScores, 0, "scores", "s = q_h k_h^T   (s_ij = q_i . k_j)"},
    {StageKind::AlibiBias, 0, "ALiBi bias",
     "b_ij = -m (i - j) for j <= i, -inf for j > i (an even head, m = m_h); the odd head after it: -m (j - i) for "
     "j >= i, -inf for j < i"},
    {StageKind::AlibiBias, 1, "ALiBi bias", "b_ij = -m_h |i - j|   (the same slope m_h both ways)"},
    {StageKind::AlibiBias, 2, "T5 bucket bias",
     "b_ij = W[h, bucket(j - i)]   (one learned number per head and bucket of the offset; W shared by all layers)"},
    {StageKind::ScaledScores, 0, "scaled scores", "s / sqrt(dh)"},
    {StageKind::ScaledScores, 1, "scaled scores + bias", "s / sqrt(dh) + b_ij"},
    {StageKind::ScaledScores, 2, "scaled scores + bias", "s / sqrt(dh) - m_h |i - j|"},
    {StageKind::ScaledScores, 3, "scores (not scaled)", "s   (T5: no 1/sqrt(dh))"},
    {StageKind::ScaledScores, 4, "scores + bias", "s + b_ij   (T5: no 1/sqrt(dh))"},
    {StageKind::AttentionWeights, 0, "attention weights", "A = softmax(q k^T / sqrt(dh))"},
    {StageKind::AttentionWeights, 1, "attention weights", "A = softmax(q k^T / sqrt(dh) + b)"},
    {StageKind::AttentionWeights, 2, "attention weights", "A = softmax(q k^T / sqrt(dh) - m_h |i - j|)"},
    {StageKind::AttentionWeights, 3, "attention weights", "A = softmax(q k^T)"},
    {StageKind::AttentionWeights, 4, "attention weights", "A = softmax(q k^T + b)"},
    {StageKind::HeadOutput, 0, "head output", "A v_h   (row i: the values mixed by row i of A)"},
    {StageKind::HeadsConcatenated, 0, "heads concatenated", "concat_i(A_i v_i)"},
    {StageKind::OutputProjection, 0, "output projection", "a = concat W_o^T + b_o"},
    {StageKind::AttentionResidual, 0, "attention + residual, norm1", "x = norm1(x + SelfAttention(x))"},
    {StageKind::AttentionResidual, 1, "attention + residual", "x = x + SelfAttention(norm1(x))"},
    {StageKind::FeedForwardHidden, 0, "feed-forward hidden", "f = ReLU(x W1^T + b1)"},
    {StageKind::FeedForwardHidden, 1, "feed-forward hidden", "f = GELU(x W1^T + b1)"},
    {StageKind::FeedForwardHidden, 2, "feed-forward hidden", "f = GELU_tanh(x W1^T + b1)"},
    {StageKind::FeedForwardHidden, 3, "feed-forward hidden (gated)", "f = ReLU(x W1^T) * (x V^T)"},
    {StageKind::FeedForwardHidden, 4, "feed-forward hidden (gated)", "f = GELU(x W1^T) * (x V^T)"},
    {StageKind::FeedForwardHidden, 5, "feed-forward hidden (gated)", "f = GELU_tanh(x W1^T) * (x V^T)"},
    {StageKind::FeedForwardResidual, 0, "feed-forward + residual, norm2", "x = norm2(x + (f W2^T + b2))"},
    {StageKind::FeedForwardResidual, 1, "feed-forward + residual", "x = x + (f W2^T + b2)"},
    {StageKind::FinalNorm, 0, "final norm", "x = LayerNorm(x)"},
    {StageKind::FinalNorm, 1, "final norm", "x = RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g"},
};

// The row of kStageTable for `kind` in a model with config c; `positions`: whether the model's
// positions are on (it has some, and no --no-pe).
inline const StageText& stage_text(StageKind kind, const Config& c, bool positions) {
  int variant = 0;
  const PositionalEncoding p = c.positional_encoding;
  if (kind == StageKind::Input)
    variant = c.embedding_norm ? 4 + (positions ? 2 : 0)
                               : (c.scale_embedding ? 1 : 0) + (positions && added_to_input(p) ? 2 : 0);
  if (kind == StageKind::ScaledScores || kind == StageKind::AttentionWeights)
    variant = !c.scale_attention                                  ? (positions ? 4 : 3)
              : !positions                                        ? 0
              : p == PositionalEncoding::Alibi || c.bucket_bias() ? 1
              : p == PositionalEncoding::AlibiSymmetric           ? 2
                                                                  : 0;
  if (kind == StageKind::AlibiBias)  // T5's buckets: t5-buckets, and MPNet's beside its learned positions
    variant = p == PositionalEncoding::AlibiSymmetric ? 1 : c.bucket_bias() ? 2 : 0;
  if (kind == StageKind::AttentionResidual || kind == StageKind::FeedForwardResidual) variant = c.norm_first ? 1 : 0;
  if (kind == StageKind::FeedForwardHidden)
    variant = (c.activation == Activation::GELU       ? 1
               : c.activation == Activation::GELUTanh ? 2
                                                      : 0) +
              (c.gated_ffn ? 3 : 0);
  if (kind == StageKind::FinalNorm) variant = c.norm == Norm::RMS ? 1 : 0;
  for (const StageText& s : kStageTable)
    if (s.kind == kind && s.variant == variant) return s;
  return kStageTable[0];  // not reached: every (kind, variant) has a row
}

// A view of one intermediate result of the first sequence of the batch.
struct Stage {
  StageKind kind;
  const char* name;      // from kStageTable
  const char* equation;  // from kStageTable
  int layer = -1;        // -1 outside the layer stack
  int head = -1;         // -1 unless per head
  const float* data;     // (rows, cols), row stride `stride`
  int rows, cols, stride;
};

// What a caller asks of a forward pass (Encoder::forward, Pipeline::encode and observe).
struct EncodeOptions {
  bool positions = true;  // false: skip the positional encoding (the ablation behind `ordo compare`)
  // The position of each sequence's first token (ordo eval --offset): token t stands at
  // first_position + t for the sinusoids, a learned table (which must then hold them), rope and alibi.
  int first_position = 0;
  // Called after each step with a view of the first sequence of the batch. Leave empty for speed.
  std::function<void(const Stage&)> observe;
};

}  // namespace ordo
