#include <algorithm>
#include <cmath>

#include <ordo/engine/encoder.h>
#include <ordo/errors.h>

#include "common/memory.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/ops.h"
#include "engine/reference.h"

namespace ordo {

void set_num_threads(int n) {
  set_kernel_threads(n);
}

int num_threads() {
  return kernel_threads();
}

Encoder::Encoder(const Model& model) : model_(model) {}
Encoder::~Encoder() = default;

void Encoder::set_compute_type(ComputeType type) {
  std::lock_guard<std::mutex> lock(states_mutex_);
  conversion_ms_ = 0;
  if (type == ComputeType::F32) {
    reduced_.reset();
    return;
  }
  for (const auto& r : converted_)
    if (r->type == type) {
      reduced_ = r;
      return;
    }
  converted_.push_back(convert_model(model_, type));
  reduced_ = converted_.back();
  conversion_ms_ = reduced_->convert_ms;
}

ComputeType Encoder::compute_type() const {
  std::lock_guard<std::mutex> lock(states_mutex_);
  return reduced_ ? reduced_->type : ComputeType::F32;
}

void Encoder::set_masked_heads(const std::vector<HeadIndex>& heads) {
  head_mask(model_.config(), heads);  // throws for a head the model does not have
  std::lock_guard<std::mutex> lock(states_mutex_);
  masked_heads_ = heads;
}

std::vector<HeadIndex> Encoder::masked_heads() const {
  std::lock_guard<std::mutex> lock(states_mutex_);
  return masked_heads_;
}

double Encoder::conversion_ms() const {
  std::lock_guard<std::mutex> lock(states_mutex_);
  return conversion_ms_;
}

namespace {
// y = x·Wᵀ + b: the model's floats (ops.h), or the weights converted to the pass's compute type.
void project(const RunState& s, const std::unique_ptr<ReducedLinear> ReducedModel::Layer::*which, int layer, float* y,
             const float* x, const float* w, const float* b, int M, int K, int N) {
  if (s.reduced)
    (s.reduced->layers[layer].*which)->forward(y, x, M, s.threads);
  else
    linear(y, x, w, b, M, K, N);
}
}  // namespace

uint64_t Encoder::activation_bytes(uint64_t B, uint64_t S, bool observed) const {
  const Config& c = model_.config();
  const uint64_t T = B * S, d = c.d_model, F = c.d_ff;
  const uint64_t ff_rows = observed ? T : std::min<uint64_t>(T, kFeedForwardRows);
  const int block = observed ? int(S) : std::min(int(S), kQueryBlock);
  const uint64_t attention =
      uint64_t(observed ? 1 : kernel_threads()) * attention_scratch_floats(int(S), c.head_dim(), block);
  // x, normed, context, sub, the result: 5·T·d; qkv: 3·T·d; ff: (rows, F); attention: (block, S)
  // weights and the packed keys and values per thread, or one S × S table when observed; pe: S·d
  return sizeof(float) * (8 * T * d + ff_rows * F + attention + S * d);
}

std::unique_ptr<RunState> Encoder::borrow_state() {
  {
    std::lock_guard<std::mutex> lock(states_mutex_);
    if (!idle_states_.empty()) {
      std::unique_ptr<RunState> s = std::move(idle_states_.back());
      idle_states_.pop_back();
      return s;
    }
  }
  return std::make_unique<RunState>();
}

void Encoder::return_state(std::unique_ptr<RunState> state) {
  std::lock_guard<std::mutex> lock(states_mutex_);
  idle_states_.push_back(std::move(state));
}

void Encoder::observe(const EncodeOptions& options, StageKind kind, int layer, int head, const float* data, int rows,
                      int cols, int stride) const {
  if (!options.observe) return;
  const Config& c = model_.config();
  const bool positions = options.positions && c.positional_encoding != PositionalEncoding::None;
  const StageText& text = stage_text(kind, c, positions);  // the equation as this run computes it
  options.observe({kind, text.name, text.equation, layer, head, data, rows, cols, stride});
}

Hidden Encoder::forward(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options) {
  const Config& c = model_.config();
  const int d = c.d_model;
  Hidden out;
  out.B = static_cast<int>(ids.size());
  out.d = d;
  if (options.first_position < 0) throw std::invalid_argument("EncodeOptions::first_position is negative");
  for (const auto& seq : ids) {
    check_ids(c, seq, options.positions ? options.first_position : 0);
    out.lengths.push_back(static_cast<int>(seq.size()));
    out.S = std::max(out.S, out.lengths.back());
  }
  const int B = out.B, S = out.S;
  if (S == 0) return out;  // no batch, or only empty texts: nothing to compute (every row is padding)
  const PassThreads pass;  // the thread count stays as it is now until this pass ends
  const uint64_t need = activation_bytes(B, S, bool(options.observe)), limit = machine_memory_bytes() / 2;
  if (need > limit)
    throw InputError("input", "a batch of " + std::to_string(B) + " x " + std::to_string(S) + " tokens needs " +
                                  std::to_string(need >> 20) +
                                  " MiB of working memory, more than half of this machine's " +
                                  std::to_string((2 * limit) >> 20) + " MiB; split it into smaller batches");

  const size_t T = size_t(B) * S;
  // This pass's own activations: borrowed, given back when the pass ends (an exception included).
  struct Borrowed {
    Encoder& encoder;
    std::unique_ptr<RunState> state;
    ~Borrowed() { encoder.return_state(std::move(state)); }
  } borrowed{*this, borrow_state()};
  RunState& s = *borrowed.state;
  s.threads = pass.threads();
  std::shared_ptr<const ReducedModel> reduced;  // kept alive for the pass, whatever set_compute_type does meanwhile
  {
    std::lock_guard<std::mutex> lock(states_mutex_);
    reduced = reduced_;
    s.masked = head_mask(c, masked_heads_);
  }
  s.reduced = reduced.get();
  const size_t ff_rows = options.observe ? T : std::min<size_t>(T, kFeedForwardRows);
  const int block = options.observe ? S : std::min(S, kQueryBlock);
  s.x.assign(T * d, 0.0f);
  s.normed.resize(c.norm_first ? T * d : 0);
  s.qkv.resize(T * 3 * d);
  s.context.resize(T * d);
  s.sub.resize(T * d);
  s.ff.resize(ff_rows * c.d_ff);
  s.probs.resize((options.observe ? 1 : size_t(s.threads)) * attention_scratch_floats(S, c.head_dim(), block));

  embed(s, ids, S, options);
  const int pairs = c.head_dim() / 2;
  if (options.positions && c.positional_encoding == PositionalEncoding::Rope &&
      (s.rope_cos.size() < size_t(S) * pairs || s.rope_first != options.first_position)) {
    // the angles of the positions from first_position on, kept while S and the start stay
    s.rope_cos.resize(size_t(S) * pairs), s.rope_sin.resize(size_t(S) * pairs);
    s.rope_first = options.first_position;
    rope_table(s.rope_cos.data(), s.rope_sin.data(), S, c.head_dim(), c.pe_base, s.rope_first);
  }
  for (int l = 0; l < c.n_layers; ++l) encoder_layer(s, l, B, S, out.lengths, options);
  if (c.final_norm) {
    layer_norm(s.x.data(), s.x.data(), model_.weights().norm_weight, model_.weights().norm_bias, int(T), d,
               float(c.layer_norm_eps));
    observe(options, StageKind::FinalNorm, -1, -1, s.x.data(), out.lengths[0], d, d);
  }

  out.data.assign(T * d, 0.0f);
  for (int b = 0; b < B; ++b)
    std::copy_n(s.x.data() + size_t(b) * S * d, size_t(out.lengths[b]) * d, out.data.data() + size_t(b) * S * d);
  return out;
}

// x_t = E[id_t] · √d + PE(t)         (or + P[t] for learned positions; nothing for "none")
// Hugging Face encoders: x_t = LayerNorm(E[id_t] + P[t + offset] + T[0])
void Encoder::embed(RunState& s, const std::vector<std::vector<int32_t>>& ids, int S,
                    const EncodeOptions& options) const {
  const Config& c = model_.config();
  const Weights& w = model_.weights();
  const int d = c.d_model;
  const float scale = c.scale_embedding ? static_cast<float>(std::sqrt(double(d))) : 1.0f;
  const bool sinusoidal = options.positions && c.positional_encoding == PositionalEncoding::Sinusoidal;
  const bool learned = options.positions && c.positional_encoding == PositionalEncoding::Learned;

  // The sinusoids of positions 0 .. from first_position + S − 1: the table only grows; earlier rows never change.
  const int first = options.first_position, cached = static_cast<int>(s.pe.size() / std::max(d, 1));
  if (sinusoidal && cached < first + S) {
    s.pe.resize(size_t(first + S) * d);
    sinusoidal_positions(s.pe.data() + size_t(cached) * d, first + S - cached, d, c.pe_layout, c.pe_base, cached);
  }
  const float* positions = sinusoidal ? s.pe.data() + size_t(first) * d
                           : learned  ? w.position_embedding + size_t(first + c.position_offset) * d
                                      : nullptr;
  const float* type = w.token_type_embedding;  // row 0, segment A (Hugging Face encoders), or null

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
      float* x = s.x.data() + (b * S + t) * d;
      for (int j = 0; j < d; ++j) x[j] = e[j] * scale + (positions ? positions[t * d + j] : 0.0f);
      if (type)
        for (int j = 0; j < d; ++j) x[j] += type[j];
    }
  // x_t = LayerNorm(x_t) (embedding_norm: the embedding sum normed before the first layer; padding rows too,
  // which no valid row attends to)
  if (c.embedding_norm)
    layer_norm(s.x.data(), s.x.data(), w.embedding_norm_weight, w.embedding_norm_bias, int(ids.size()) * S, d,
               float(c.layer_norm_eps));
  observe(options, StageKind::Input, -1, -1, s.x.data(), int(ids[0].size()), d, d);
}

void Encoder::sublayer(RunState& s, int T, const float* gamma, const float* beta,
                       const std::function<void(const float* in)>& f) const {
  const Config& c = model_.config();
  const int d = c.d_model;
  const float eps = static_cast<float>(c.layer_norm_eps);
  float* x = s.x.data();
  if (c.norm_first) {  // pre-LN: x = x + f(LayerNorm(x))
    layer_norm(s.normed.data(), x, gamma, beta, T, d, eps);
    f(s.normed.data());
    residual(x, s.sub.data(), T, d);
  } else {  // post-LN: x = LayerNorm(x + f(x)), the sum and the norm in one pass
    f(x);
    add_layer_norm(x, s.sub.data(), gamma, beta, T, d, eps);
  }
}

void Encoder::encoder_layer(RunState& s, int l, int B, int S, const std::vector<int>& lengths,
                            const EncodeOptions& options) const {
  const Config& c = model_.config();
  const LayerWeights& w = model_.weights().layers[l];
  const int d = c.d_model, F = c.d_ff, T = B * S, L0 = lengths[0];

  sublayer(s, T, w.norm1_weight, w.norm1_bias,
           [&](const float* in) { self_attention(s, w, in, l, B, S, lengths, options); });
  observe(options, StageKind::AttentionResidual, l, -1, s.x.data(), L0, d, d);

  // FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2, on equal blocks of at most kFeedForwardRows rows (all rows
  // at once for an observer, which sees the first sequence's hidden layer).
  const int most = options.observe ? T : std::min(T, kFeedForwardRows);
  const int blocks = (T + most - 1) / most, rows = (T + blocks - 1) / blocks;
  sublayer(s, T, w.norm2_weight, w.norm2_bias, [&](const float* in) {
    for (int r0 = 0; r0 < T; r0 += rows) {
      const int n = std::min(rows, T - r0);
      project(s, &ReducedModel::Layer::linear1, l, s.ff.data(), in + size_t(r0) * d, w.linear1_weight, w.linear1_bias,
              n, d, F);
      activation(s.ff.data(), size_t(n) * F, c.activation);
      if (r0 == 0) observe(options, StageKind::FeedForwardHidden, l, -1, s.ff.data(), L0, F, F);
      project(s, &ReducedModel::Layer::linear2, l, s.sub.data() + size_t(r0) * d, s.ff.data(), w.linear2_weight,
              w.linear2_bias, n, F, d);
    }
  });
  observe(options, StageKind::FeedForwardResidual, l, -1, s.x.data(), L0, d, d);
}

// For an observer, one head's inside before its softmax: its q, k and v columns, and the scores
// s = q·kᵀ and s/√dh, computed here in plain loops (the fast path fuses them into one product).
void Encoder::observe_head_inputs(const EncodeOptions& options, int layer, int head, const float* q, int L, int dh,
                                  int ld, float alibi_before, float alibi_after) const {
  const int d = model_.config().d_model;
  observe(options, StageKind::HeadQuery, layer, head, q, L, dh, ld);
  observe(options, StageKind::HeadKey, layer, head, q + d, L, dh, ld);
  observe(options, StageKind::HeadValue, layer, head, q + 2 * d, L, dh, ld);
  std::vector<float> scores(size_t(L) * L);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) {
      float sum = 0.0f;
      for (int e = 0; e < dh; ++e) sum += q[size_t(i) * ld + e] * q[size_t(j) * ld + d + e];
      scores[size_t(i) * L + j] = sum;
    }
  observe(options, StageKind::AttentionScores, layer, head, scores.data(), L, L, L);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (float& v : scores) v *= scale;
  if (alibi_before > 0.0f || alibi_after > 0.0f) {  // as attention_head adds it
    std::vector<float> bias(size_t(L) * L);
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) bias[size_t(i) * L + j] = reference::alibi_bias(i, j, alibi_before, alibi_after);
    observe(options, StageKind::AlibiBias, layer, head, bias.data(), L, L, L);
    for (size_t n = 0; n < scores.size(); ++n) scores[n] += bias[n];
  }
  observe(options, StageKind::ScaledScores, layer, head, scores.data(), L, L, L);
}

// MultiHead(x) = Concat(head_1..head_h)·Woᵀ + bo,  head_i = Attention(x·Wqᵢᵀ, x·Wkᵢᵀ, x·Wvᵢᵀ)   [§3.2.2]
// One GEMM makes q | k | v for every token; each head then reads its dh columns in place.
void Encoder::self_attention(RunState& s, const LayerWeights& w, const float* in, int layer, int B, int S,
                             const std::vector<int>& lengths, const EncodeOptions& options) const {
  const Config& c = model_.config();
  const int d = c.d_model, h = c.n_heads, dh = c.head_dim(), T = B * S;
  project(s, &ReducedModel::Layer::in_proj, layer, s.qkv.data(), in, w.in_proj_weight, w.in_proj_bias, T, d, 3 * d);
  observe(options, StageKind::Qkv, layer, -1, s.qkv.data(), lengths[0], 3 * d, 3 * d);
  const PositionalEncoding pe = options.positions ? c.positional_encoding : PositionalEncoding::None;
  if (pe == PositionalEncoding::Rope) {  // q and k of every head turned by their position's angles
    for (int b = 0; b < B; ++b) {
      float* qb = s.qkv.data() + size_t(b) * S * 3 * d;
      rope(qb, lengths[b], 3 * d, h, dh, s.rope_cos.data(), s.rope_sin.data());
      rope(qb + d, lengths[b], 3 * d, h, dh, s.rope_cos.data(), s.rope_sin.data());
    }
    observe(options, StageKind::RotatedQk, layer, -1, s.qkv.data(), lengths[0], 3 * d, 3 * d);
  }

  // One task per (sequence, head); each thread has its own scratch: (block, S) weights of a block
  // of query rows, or the whole (S, S) table for an observer, which sees it.
  const int block = options.observe ? S : std::min(S, kQueryBlock);
  const size_t scratch = attention_scratch_floats(S, dh, block);
  auto head = [&](int task, int thread) {
    const int b = task / h, i = task % h, L = lengths[b];  // keys past L are padding: never attended to
    const float* q = s.qkv.data() + size_t(b) * S * 3 * d + size_t(i) * dh;
    float* out = s.context.data() + size_t(b) * S * d + size_t(i) * dh;
    float* probs = s.probs.data() + size_t(thread) * scratch;
    const reference::AlibiSlopes m = reference::alibi_head_slopes(pe, h, i);  // 0 and 0 without alibi
    const float before = static_cast<float>(m.before), after = static_cast<float>(m.after);
    if (b == 0 && options.observe) observe_head_inputs(options, layer, i, q, L, dh, 3 * d, before, after);
    attention_head(out, q, q + d, q + 2 * d, probs, L, dh, 3 * d, d, block, before, after);
    if (s.masked[size_t(layer) * h + i])  // a masked head adds nothing: zeros in its slot of the concatenation
      for (int t = 0; t < L; ++t) std::fill_n(out + size_t(t) * d, dh, 0.0f);
    if (b == 0) {
      observe(options, StageKind::AttentionWeights, layer, i, probs, L, L, L);
      observe(options, StageKind::HeadOutput, layer, i, out, L, dh, d);
    }
  };
  // attention_head's cblas_sgemm, on every thread (on this one alone when observed)
  if (!have_gemm()) blas_check_room(options.observe ? 1 : kernel_threads());
  if (options.observe)  // in order, for the observer
    for (int task = 0; task < B * h; ++task) head(task, 0);
  else {
    // q·kᵀ and weights·v: 2·2·L²·dh FLOPs per head at most
    parallel_for(B * h, 4.0 * B * h * double(S) * S * dh, head);
  }
  for (int b = 0; b < B; ++b)
    std::fill(s.context.data() + (size_t(b) * S + lengths[b]) * d, s.context.data() + size_t(b + 1) * S * d, 0.0f);
  observe(options, StageKind::HeadsConcatenated, layer, -1, s.context.data(), lengths[0], d, d);
  project(s, &ReducedModel::Layer::out_proj, layer, s.sub.data(), s.context.data(), w.out_proj_weight, w.out_proj_bias,
          T, d, d);
  observe(options, StageKind::OutputProjection, layer, -1, s.sub.data(), lengths[0], d, d);
}

}  // namespace ordo
