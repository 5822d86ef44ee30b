#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

#include <ordo/engine/encoder.h>
#include <ordo/errors.h>

#include "common/memory.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/ops.h"
#include "engine/reference.h"

namespace ordo {

namespace {

// Where each sequence's rows begin in the pass's activations (RunState: the sequences one after
// another, no padding rows), and the total, start[B].
std::vector<size_t> starts(const std::vector<int>& lengths) {
  std::vector<size_t> start(lengths.size() + 1, 0);
  for (size_t b = 0; b < lengths.size(); ++b) start[b + 1] = start[b] + size_t(lengths[b]);
  return start;
}

// Sizes one of the pass's buffers to n values. A buffer kept from an earlier pass is reused when it
// holds n; when it does not, it is replaced, without copying what it held, by one half as large again
// as its old capacity (or n, if more). A file's texts run sorted by length, so its passes come in
// rising sizes: buffers that fit each pass exactly would be replaced at almost every pass, each time
// with new pages the kernel must zero (`ordo encode` of all-MiniLM-L6-v2 over 1,000 lines took 62,070
// page faults with exact fits, 52,670 with this).
template <class T>
void fit(std::vector<T>& v, size_t n) {
  if (n > v.capacity()) {
    const size_t want = std::max(n, v.capacity() + v.capacity() / 2);
    std::vector<T>().swap(v);
    v.reserve(want);
  }
  v.resize(n);
}

}  // namespace

// Every layer's f32 weights packed once for linear_prepacked (engine/kernels/gemm.h), in one block
// of memory asked for in 2 MiB pages where the system gives them (the kernel reads them front to
// back, 42.5 MB for all-MiniLM-L6-v2, and 4 KiB pages would cost a TLB miss every 4 KB).
struct PrepackedModel {
  struct Layer {
    const float *in_proj = nullptr, *out_proj = nullptr, *linear1 = nullptr, *linear1_v = nullptr, *linear2 = nullptr;
  };
  std::vector<Layer> layers;

  explicit PrepackedModel(const Model& model) {
    const Config& c = model.config();
    const int d = c.d_model, F = c.d_ff, A = c.attention_width();
    const std::vector<LayerWeights>& weights = model.weights().layers;
    struct Product {
      const float* w;
      int N, K;
      const float** to;
    };
    std::vector<Product> products;
    layers.resize(weights.size());
    for (size_t l = 0; l < weights.size(); ++l) {
      const LayerWeights& w = weights[l];
      Layer& p = layers[l];
      products.push_back({w.in_proj_weight, 3 * A, d, &p.in_proj});
      products.push_back({w.out_proj_weight, d, A, &p.out_proj});
      products.push_back({w.linear1_weight, F, d, &p.linear1});
      if (w.linear1_v_weight) products.push_back({w.linear1_v_weight, F, d, &p.linear1_v});
      products.push_back({w.linear2_weight, d, F, &p.linear2});
    }
    size_t floats = 0;
    for (const Product& p : products) floats += (prepacked_floats(p.N, p.K) + 15) / 16 * 16;  // each on 64 bytes
    bytes_ = std::max<size_t>(floats * sizeof(float), 1);
    void* block = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(block, bytes_, MADV_HUGEPAGE);
#endif
    block_ = static_cast<float*>(block);
    float* at = block_;
    for (const Product& p : products) {
      prepack(at, p.w, p.N, p.K);
      *p.to = at;
      at += (prepacked_floats(p.N, p.K) + 15) / 16 * 16;
    }
  }
  ~PrepackedModel() {
    ::munmap(block_, bytes_);
  }
  PrepackedModel(const PrepackedModel&) = delete;
  PrepackedModel& operator=(const PrepackedModel&) = delete;

 private:
  float* block_ = nullptr;
  size_t bytes_ = 0;
};

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

// y = x·Wᵀ + b on M rows: the model's floats (ops.h's linear, or linear_prepacked on their packed copy),
// or the weights converted to the pass's compute type.
void Encoder::project(const RunState& s, Product p, int layer, float* y, const float* x, int M) const {
  const Config& c = model_.config();
  const LayerWeights& w = model_.weights().layers[layer];
  const int d = c.d_model, F = c.d_ff, A = c.attention_width();
  if (s.reduced) {
    const ReducedModel::Layer& r = s.reduced->layers[layer];
    const ReducedLinear& product = p == Product::InProjection    ? *r.in_proj
                                   : p == Product::OutProjection ? *r.out_proj
                                   : p == Product::Linear1       ? *r.linear1
                                   : p == Product::Linear1V      ? *r.linear1_v
                                                                 : *r.linear2;
    product.forward(y, x, M, s.threads);
    return;
  }
  // The product's weight (N, K), its copy packed for linear_prepacked where the pass has one, and its bias.
  struct Weight {
    const float *weight, *packed, *bias;
    int K, N;
  };
  const PrepackedModel::Layer* packed = s.prepacked ? &s.prepacked->layers[layer] : nullptr;
  auto pick = [&](const float* weight, const float* PrepackedModel::Layer::*copy, const float* bias, int K, int N) {
    return Weight{weight, packed ? packed->*copy : nullptr, bias, K, N};
  };
  using L = PrepackedModel::Layer;
  const Weight u = p == Product::InProjection    ? pick(w.in_proj_weight, &L::in_proj, w.in_proj_bias, d, 3 * A)
                   : p == Product::OutProjection ? pick(w.out_proj_weight, &L::out_proj, w.out_proj_bias, A, d)
                   : p == Product::Linear1       ? pick(w.linear1_weight, &L::linear1, w.linear1_bias, d, F)
                   : p == Product::Linear1V      ? pick(w.linear1_v_weight, &L::linear1_v, nullptr, d, F)
                                                 : pick(w.linear2_weight, &L::linear2, w.linear2_bias, F, d);
  if (u.packed && M <= kPrepackedRows) return linear_prepacked(y, x, u.packed, u.bias, M, u.K, u.N);
  linear(y, x, u.weight, u.bias, M, u.K, u.N);
}

uint64_t Encoder::activation_bytes(uint64_t B, uint64_t S, bool observed) const {
  const Config& c = model_.config();
  const uint64_t T = B * S, d = c.d_model, F = c.d_ff, A = uint64_t(c.attention_width());
  const uint64_t ff_rows = observed ? T : std::min<uint64_t>(T, kFeedForwardRows);
  const int block = observed ? int(S) : std::min(int(S), kQueryBlock);
  const uint64_t attention =
      uint64_t(observed ? 1 : kernel_threads()) * attention_scratch_floats(int(S), c.head_dim(), block);
  // x, normed, sub, the result: 4·T·d; qkv and context: 4·T·A; ff (and ff_v): (rows, F); attention:
  // (block, S) weights and the packed keys and values per thread, or one S × S table when observed; pe: S·d
  return sizeof(float) * (4 * T * d + 4 * T * A + ff_rows * F * (c.gated_ffn ? 2 : 1) + attention + S * d);
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

Hidden Encoder::shape(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options) const {
  const Config& c = model_.config();
  Hidden out;
  out.B = static_cast<int>(ids.size());
  out.d = c.d_model;
  if (options.first_position < 0) throw std::invalid_argument("EncodeOptions::first_position is negative");
  for (const auto& seq : ids) {
    check_ids(c, seq, options.positions ? options.first_position : 0);
    out.lengths.push_back(static_cast<int>(seq.size()));
    out.S = std::max(out.S, out.lengths.back());
  }
  return out;
}

void Encoder::prepare(Pass& pass, int B, int S, bool watched, const EncodeOptions& options) {
  const Config& c = model_.config();
  const int d = c.d_model;
  const uint64_t need = activation_bytes(B, S, watched), limit = machine_memory_bytes() / 2;
  if (need > limit)
    throw InputError("input", "a batch of " + std::to_string(B) + " x " + std::to_string(S) + " tokens needs " +
                                  std::to_string(need >> 20) +
                                  " MiB of working memory, more than half of this machine's " +
                                  std::to_string((2 * limit) >> 20) + " MiB; split it into smaller batches");
  RunState& s = *pass.state;
  s.threads = kernel_threads();  // fixed for the pass by the caller's PassThreads
  {
    std::lock_guard<std::mutex> lock(states_mutex_);
    pass.reduced = reduced_;
    if (!reduced_ && prepack_weights()) {
      if (!prepacked_) prepacked_ = std::make_shared<const PrepackedModel>(model_);
      pass.prepacked = prepacked_;
    }
    s.masked = head_mask(c, masked_heads_);
  }
  s.reduced = pass.reduced.get();
  s.prepacked = pass.prepacked.get();
  const size_t T = size_t(B) * S;
  const size_t ff_rows = watched ? T : std::min<size_t>(T, kFeedForwardRows);
  const int block = watched ? S : std::min(S, kQueryBlock);
  fit(s.x, T * d);
  std::fill(s.x.begin(), s.x.end(), 0.0f);
  fit(s.normed, c.norm_first ? T * d : 0);
  fit(s.qkv, T * 3 * c.attention_width());
  fit(s.context, T * c.attention_width());
  fit(s.sub, T * d);
  fit(s.ff, ff_rows * c.d_ff);
  fit(s.ff_v, c.gated_ffn ? ff_rows * c.d_ff : 0);
  fit(s.probs, (watched ? 1 : size_t(s.threads)) * attention_scratch_floats(S, c.head_dim(), block));
  const int pairs = c.head_dim() / 2;
  if (options.positions && c.positional_encoding == PositionalEncoding::Rope &&
      (s.rope_cos.size() < size_t(S) * pairs || s.rope_first != options.first_position)) {
    // the angles of the positions from first_position on, kept while S and the start stay
    s.rope_cos.resize(size_t(S) * pairs), s.rope_sin.resize(size_t(S) * pairs);
    s.rope_first = options.first_position;
    rope_table(s.rope_cos.data(), s.rope_sin.data(), S, c.head_dim(), c.pe_base, s.rope_first);
  }
  if (options.positions && c.bucket_bias()) {
    // each head's bias by offset j − i, −(S − 1) .. S − 1: the one table read through the buckets
    const int span = 2 * S - 1;
    s.offset_bias.resize(size_t(c.n_heads) * span);
    for (int head = 0; head < c.n_heads; ++head)
      for (int o = -(S - 1); o <= S - 1; ++o)
        s.offset_bias[size_t(head) * span + o + S - 1] =
            model_.weights().position_bias[size_t(head) * c.relative_buckets +
                                           reference::relative_bucket(o, c.relative_buckets, c.relative_max_distance)];
  }
}

Hidden Encoder::forward(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options) {
  if (options.observe) {  // the first sequence watched, stage by stage; the batch as always
    Hidden first = watch(ids.at(0), options);
    if (ids.size() == 1) return first;
    EncodeOptions unwatched = options;
    unwatched.observe = nullptr;
    return forward(ids, unwatched);
  }
  const Config& c = model_.config();
  const int d = c.d_model;
  Hidden out = shape(ids, options);
  const int B = out.B, S = out.S;
  if (S == 0) return out;     // no batch, or only empty texts: nothing to compute (every row is padding)
  const PassThreads threads;  // the thread count stays as it is now until this pass ends
  Pass pass(*this);
  prepare(pass, B, S, false, options);
  RunState& s = *pass.state;
  const std::vector<size_t> start = starts(out.lengths);
  const size_t T = start.back();  // the batch's tokens, no padding rows

  embed(s, ids, S, options);
  for (int l = 0; l < c.n_layers; ++l) encoder_layer(s, l, B, S, out.lengths, options);
  if (c.final_norm) norm(s.x.data(), s.x.data(), model_.weights().norm_weight, model_.weights().norm_bias, int(T));

  out.data.assign(size_t(B) * S * d, 0.0f);  // padded: the rows past each length stay zero
  for (int b = 0; b < B; ++b)
    std::copy_n(s.x.data() + start[b] * d, size_t(out.lengths[b]) * d, out.data.data() + size_t(b) * S * d);
  return out;
}

const float* Encoder::positions(RunState& s, int S, const EncodeOptions& options) const {
  const Config& c = model_.config();
  const int d = c.d_model;
  if (!options.positions) return nullptr;
  if (c.positional_encoding == PositionalEncoding::Learned)
    return model_.weights().position_embedding + size_t(options.first_position + c.position_offset) * d;
  if (c.positional_encoding != PositionalEncoding::Sinusoidal) return nullptr;
  // The sinusoids of positions 0 .. first_position + S − 1: the table only grows; earlier rows never change.
  const int first = options.first_position, cached = static_cast<int>(s.pe.size() / std::max(d, 1));
  if (cached < first + S) {
    s.pe.resize(size_t(first + S) * d);
    sinusoidal_positions(s.pe.data() + size_t(cached) * d, first + S - cached, d, c.pe_layout, c.pe_base, cached);
  }
  return s.pe.data() + size_t(first) * d;
}

// x_t = E[id_t] · √d + PE(t)         (or + P[t] for learned positions; nothing for "none")
// Hugging Face encoders: x_t = LayerNorm(E[id_t] + P[t + offset] + T[0])
void Encoder::embed(RunState& s, const std::vector<std::vector<int32_t>>& ids, int S,
                    const EncodeOptions& options) const {
  const Config& c = model_.config();
  const Weights& w = model_.weights();
  const int d = c.d_model;
  const float scale = c.scale_embedding ? static_cast<float>(std::sqrt(double(d))) : 1.0f;
  const float* p = positions(s, S, options);
  const float* type = w.token_type_embedding;  // row 0, segment A (Hugging Face encoders), or null
  // RoBERTa and MPNet count only the tokens that are not <pad> (id padding_idx = position_offset − 1): a
  // <pad> in the text takes row padding_idx, and the tokens after it one row less each (reference::embed_hf)
  const int pad = c.positions_skip_pads() && p ? c.position_offset - 1 : -1;
  size_t row = 0;  // the sequences one after another (RunState)
  for (size_t b = 0; b < ids.size(); ++b)
    for (size_t t = 0, counted = 0; t < ids[b].size(); ++t, ++row) {
      const float* e = w.embedding + size_t(ids[b][t]) * d;
      float* x = s.x.data() + row * d;
      const float* pt = !p ? nullptr : ids[b][t] == pad ? w.position_embedding + size_t(pad) * d : p + counted++ * d;
      for (int j = 0; j < d; ++j) x[j] = e[j] * scale + (pt ? pt[j] : 0.0f);
      if (type)
        for (int j = 0; j < d; ++j) x[j] += type[j];
    }
  // x_t = LayerNorm(x_t) (embedding_norm: the embedding sum normed before the first layer)
  if (c.embedding_norm)
    layer_norm(s.x.data(), s.x.data(), w.embedding_norm_weight, w.embedding_norm_bias, int(row), d,
               float(c.layer_norm_eps));
}

void Encoder::norm(float* out, const float* x, const float* gamma, const float* beta, int M) const {
  const Config& c = model_.config();
  const float eps = static_cast<float>(c.layer_norm_eps);
  if (c.norm == Norm::RMS)
    rms_norm(out, x, gamma, M, c.d_model, eps);
  else
    layer_norm(out, x, gamma, beta, M, c.d_model, eps);
}

void Encoder::sublayer(RunState& s, int T, const float* gamma, const float* beta,
                       const std::function<void(const float* in)>& f) const {
  const Config& c = model_.config();
  const int d = c.d_model;
  const float eps = static_cast<float>(c.layer_norm_eps);
  float* x = s.x.data();
  if (c.norm_first) {  // pre-LN: x = x + f(LayerNorm(x))   (or RMSNorm)
    norm(s.normed.data(), x, gamma, beta, T);
    f(s.normed.data());
    residual(x, s.sub.data(), T, d);
  } else if (c.norm == Norm::RMS) {  // post-LN with RMSNorm: x = RMSNorm(x + f(x))
    f(x);
    residual(x, s.sub.data(), T, d);
    norm(x, x, gamma, beta, T);
  } else {  // post-LN: x = LayerNorm(x + f(x)), the sum and the norm in one pass
    f(x);
    add_layer_norm(x, s.sub.data(), gamma, beta, T, d, eps);
  }
}

// FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2;  gated: (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ
void Encoder::feed_forward(RunState& s, int layer, float* out, const float* in, int n) const {
  const Config& c = model_.config();
  const size_t values = size_t(n) * c.d_ff;
  project(s, Product::Linear1, layer, s.ff.data(), in, n);
  activation(s.ff.data(), values, c.activation);
  if (c.gated_ffn) {
    project(s, Product::Linear1V, layer, s.ff_v.data(), in, n);
    float* f = s.ff.data();
    const float* v = s.ff_v.data();
    for (size_t i = 0; i < values; ++i) f[i] *= v[i];
  }
  project(s, Product::Linear2, layer, out, s.ff.data(), n);
}

void Encoder::encoder_layer(RunState& s, int l, int B, int S, const std::vector<int>& lengths,
                            const EncodeOptions& options) const {
  const Config& c = model_.config();
  const LayerWeights& w = model_.weights().layers[l];
  const int d = c.d_model, T = int(starts(lengths).back());

  sublayer(s, T, w.norm1_weight, w.norm1_bias,
           [&](const float* in) { self_attention(s, in, l, B, S, lengths, options); });

  // FFN(x) on equal blocks of at most kFeedForwardRows rows
  const int blocks = (T + kFeedForwardRows - 1) / kFeedForwardRows, rows = (T + blocks - 1) / blocks;
  sublayer(s, T, w.norm2_weight, w.norm2_bias, [&](const float* in) {
    for (int r0 = 0; r0 < T; r0 += rows) {
      const int n = std::min(rows, T - r0);
      feed_forward(s, l, s.sub.data() + size_t(r0) * d, in + size_t(r0) * d, n);
    }
  });
}

void Encoder::rotate(RunState& s, int B, const std::vector<int>& lengths) const {
  const Config& c = model_.config();
  const int A = c.attention_width();
  const std::vector<size_t> start = starts(lengths);
  for (int b = 0; b < B; ++b) {
    float* qb = s.qkv.data() + start[b] * 3 * A;
    rope(qb, lengths[b], 3 * A, c.n_heads, c.head_dim(), s.rope_cos.data(), s.rope_sin.data());
    rope(qb + A, lengths[b], 3 * A, c.n_heads, c.head_dim(), s.rope_cos.data(), s.rope_sin.data());
  }
}

// MultiHead(x) = Concat(head_1..head_h)·Woᵀ + bo,  head_i = Attention(x·Wqᵢᵀ, x·Wkᵢᵀ, x·Wvᵢᵀ)   [§3.2.2]
// One GEMM makes q | k | v for every token; each head then reads its dh columns in place. A = h·dh.
void Encoder::self_attention(RunState& s, const float* in, int layer, int B, int S, const std::vector<int>& lengths,
                             const EncodeOptions& options) const {
  const Config& c = model_.config();
  const std::vector<size_t> start = starts(lengths);
  const int A = c.attention_width(), h = c.n_heads, dh = c.head_dim(), T = int(start.back());
  project(s, Product::InProjection, layer, s.qkv.data(), in, T);
  const PositionalEncoding pe = options.positions ? c.positional_encoding : PositionalEncoding::None;
  if (pe == PositionalEncoding::Rope) rotate(s, B, lengths);

  // One task per (sequence, head); each thread has its own scratch: (block, S) weights of a block
  // of query rows and the packed keys and values.
  const int block = std::min(S, kQueryBlock);
  const size_t scratch = attention_scratch_floats(S, dh, block);
  auto head = [&](int task, int thread) {
    const int b = task / h, i = task % h, L = lengths[b];  // keys past L are padding: never attended to
    const float* q = s.qkv.data() + start[b] * 3 * A + size_t(i) * dh;
    float* out = s.context.data() + start[b] * A + size_t(i) * dh;
    const reference::AlibiSlopes m = reference::alibi_head_slopes(pe, h, i, c.alibi_slopes);  // 0 and 0 without alibi
    attention_head(out, q, q + A, q + 2 * A, s.probs.data() + size_t(thread) * scratch, L, dh, 3 * A, A, block,
                   static_cast<float>(m.before), static_cast<float>(m.after), relative_bias(s, pe, i, S),
                   c.scale_attention);
    if (s.masked[size_t(layer) * h + i])  // a masked head adds nothing: zeros in its slot of the concatenation
      for (int t = 0; t < L; ++t) std::fill_n(out + size_t(t) * A, dh, 0.0f);
  };
  if (!have_gemm()) blas_check_room(kernel_threads());          // attention_head's cblas_sgemm, on every thread
  parallel_for(B * h, 4.0 * B * h * double(S) * S * dh, head);  // q·kᵀ and weights·v: 2·2·L²·dh FLOPs per head
  project(s, Product::OutProjection, layer, s.sub.data(), s.context.data(), T);
}

}  // namespace ordo
