// ordo: token ids in, hidden states out — nn.TransformerEncoder(batch_first=True) in eval mode.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ordo/compute_type.h>
#include <ordo/engine/model.h>
#include <ordo/threads.h>
#include <ordo/trace.h>

namespace ordo {

struct ReducedModel;
struct PrepackedModel;

// Hidden states of a padded batch: (B, S, d), S the longest length. Rows at and past a
// sequence's length are zero.
struct Hidden {
  int B = 0, S = 0, d = 0;
  std::vector<int> lengths;  // (B)
  std::vector<float> data;   // (B, S, d)
  const float* row(int b, int t) const { return data.data() + (size_t(b) * S + t) * d; }
};

// Activations of one forward pass. A pass borrows one from its Encoder and gives it back at the
// end, so a second pass reuses the memory while shapes do not grow.
// T is the batch's tokens: the sequences' rows one after another, with no padding rows, so the
// products, norms and activations do no work for padding; only the attention, and the Hidden that
// forward() returns, see each sequence on its own.
struct RunState {
  std::vector<float> x;                   // (T, d)   the residual stream
  std::vector<float> normed;              // (T, d)   a sublayer's normalised input (pre-LN)
  std::vector<float> qkv;                 // (T, 3A)  queries | keys | values, heads side by side (A = h·dh)
  std::vector<float> context;             // (T, A)   attention output, heads concatenated
  std::vector<float> sub;                 // (T, d)   a sublayer's output, before the residual add
  std::vector<float> ff;                  // (rows, F) feed-forward hidden layer, for a block of rows at a time
  std::vector<float> ff_v;                // (rows, F) gated feed-forward: x·Vᵀ, the factor of act(x·W1ᵀ)
  std::vector<float> probs;               // (threads, block, S) attention weights of a block of query rows
  std::vector<float> rope_cos, rope_sin;  // (S, dh/2) rotary angles' cos and sin (rope models)
  int rope_first = 0;                     // the position of their first row
  std::vector<float> offset_bias;         // (h, 2S − 1) bucket bias: W[head, bucket(o)] at o = j − i + S − 1
  std::vector<float> pe;                  // (S, d)   positional encodings, kept between calls
  int threads = 1;                        // the engine's thread count, fixed for the pass
  const ReducedModel* reduced = nullptr;  // the weight products at reduced precision, or null (f32)
  std::vector<bool> masked;               // (n_layers · n_heads): the heads switched off for the pass
  // f32: the weights packed for linear_prepacked (engine/kernels/cpu.h's prepack_weights), or null
  const PrepackedModel* prepacked = nullptr;
};

// Rows of the feed-forward layer computed at a time: its (rows, F) hidden layer is the largest
// buffer after the residual stream's, and beyond 2048 rows a bigger block is no faster.
constexpr int kFeedForwardRows = 2048;

// Safe to share between threads: every pass has its own RunState (borrowed from a small list under
// a mutex, made when none is free), and reads the model only. Passes running at once share the
// engine's threads (set_num_threads), which take their jobs in turn.
class Encoder {
 public:
  explicit Encoder(const Model& model);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // ids: B sequences of token ids in [0, V). Throws InputError for an id out of range, a
  // sequence past a learned position table, or a batch whose working memory (activation_bytes)
  // is more than half of this machine's.
  // With options.observe set, the first sequence also runs through watch() below, which hands each of
  // its stages to the observer.
  Hidden forward(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options = {});

  // The watched pass (engine/watch.cpp): one sequence through the same steps and kernels as forward(),
  // one step at a time with nothing fused, each stage handed to options.observe as it is computed
  // (what `ordo trace`, `attention` and the page look at). Each head's whole (L, L) weights are kept.
  Hidden watch(const std::vector<int32_t>& ids, const EncodeOptions& options);

  // Bytes of activations forward() needs for a B × S batch; observed: with an observer, which
  // sees each head's full S × S attention weights.
  uint64_t activation_bytes(uint64_t B, uint64_t S, bool observed = false) const;

  // The precision of the weight products from the next pass on. The weights are converted here,
  // once per type (the model's floats stay as they are, f32 uses them directly); a pass already
  // running keeps the type it started with. Throws std::runtime_error for BF16 or Int8 in a build
  // without oneDNN.
  void set_compute_type(ComputeType type);
  ComputeType compute_type() const;
  // Milliseconds the last conversion took (0 for f32 or a type converted before).
  double conversion_ms() const;

  // Heads switched off from the next pass on (head_mask in config.h: a masked head's A·v is zeros in
  // its slot of the concatenation; its weights are still computed and observed). {} switches every
  // head on again. Throws std::invalid_argument for a head the model does not have.
  void set_masked_heads(const std::vector<HeadIndex>& heads);
  std::vector<HeadIndex> masked_heads() const;

 private:
  // One pass's activations, borrowed from the encoder and given back when the pass ends (an exception
  // included), sized for a B × S batch (watched: each head's whole S × S weights kept), with the
  // compute type and the masked heads fixed for the pass.
  struct Pass {
    explicit Pass(Encoder& e) : encoder(e), state(e.borrow_state()) {}
    ~Pass() { encoder.return_state(std::move(state)); }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Encoder& encoder;
    std::unique_ptr<RunState> state;
    std::shared_ptr<const ReducedModel> reduced;  // kept alive for the pass, whatever set_compute_type does
    std::shared_ptr<const PrepackedModel> prepacked;
  };
  // The batch's shape (B, S, lengths) after checking every id; then, S > 0, the pass's state sized,
  // the rotary angles included.
  Hidden shape(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options) const;
  void prepare(Pass& pass, int B, int S, bool watched, const EncodeOptions& options);

  // x_t = E[id_t]·√d + PE(t)  into s.x (T, d)
  void embed(RunState& s, const std::vector<std::vector<int32_t>>& ids, int S, const EncodeOptions& options) const;
  // The positions' sinusoids (s.pe, rows first_position .. first_position + S − 1) or learned rows, or null
  const float* positions(RunState& s, int S, const EncodeOptions& options) const;
  // x = sublayer(SelfAttention), then x = sublayer(FFN), FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2, on s.x (T, d)
  void encoder_layer(RunState& s, int l, int B, int S, const std::vector<int>& lengths,
                     const EncodeOptions& options) const;
  // The sublayer connection on s.x (T, d), the one place where post-LN and pre-LN differ:
  //   post-LN: x = LayerNorm(x + f(x));  pre-LN: x = x + f(LayerNorm(x)).
  // f(in) reads its input (T, d) and leaves its output in s.sub (T, d).
  void sublayer(RunState& s, int T, const float* gamma, const float* beta,
                const std::function<void(const float* in)>& f) const;
  // MultiHead(in) = Concat(head_1 .. head_h)·W_oᵀ + b_o, head_i = softmax(q_i·k_iᵀ/√dh)·v_i
  // in (T, d) -> s.sub (T, d), through s.qkv (T, 3A), s.probs and s.context (T, A), A = h·dh
  void self_attention(RunState& s, const float* in, int layer, int B, int S, const std::vector<int>& lengths,
                      const EncodeOptions& options) const;
  // A layer's four products (five with a gated FFN's V), y = x·Wᵀ + b on M rows: the model's floats
  // (ops.h's linear), or the weights converted to the pass's compute type.
  enum class Product { InProjection, OutProjection, Linear1, Linear1V, Linear2 };
  // The model's norm (config norm: LayerNorm or RMSNorm) of M rows, out may equal x
  void norm(float* out, const float* x, const float* gamma, const float* beta, int M) const;
  // FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2, or gated (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ, on n rows: in (n, d) -> out (n, d)
  // through s.ff (and s.ff_v) (n, F)
  void feed_forward(RunState& s, int layer, float* out, const float* in, int n) const;
  void project(const RunState& s, Product p, int layer, float* y, const float* x, int M) const;
  // q and k of every head (s.qkv, the B sequences' rows one after another) turned by their position's angles
  void rotate(RunState& s, int B, const std::vector<int>& lengths) const;

  // The watched pass's hand-outs (engine/watch.cpp)
  void hand_out(const EncodeOptions& options, StageKind kind, int layer, int head, const float* data, int rows,
                int cols, int stride) const;
  // t5-buckets and MPNet (Config::bucket_bias), positions on (pe not None): head `head`'s bias by offset, at
  // offset 0 of its row of s.offset_bias; null otherwise
  const float* relative_bias(const RunState& s, PositionalEncoding pe, int head, int S) const {
    return pe != PositionalEncoding::None && model_.config().bucket_bias()
               ? s.offset_bias.data() + size_t(head) * (2 * S - 1) + (S - 1)
               : nullptr;
  }
  void hand_out_head_inputs(const EncodeOptions& options, int layer, int head, const float* q, int L, int dh, int ld,
                            float alibi_before, float alibi_after, const float* relative) const;

  std::unique_ptr<RunState> borrow_state();
  void return_state(std::unique_ptr<RunState> state);

  const Model& model_;
  mutable std::mutex states_mutex_;                     // guards idle_states_, converted_, reduced_ and conversion_ms_
  std::vector<std::unique_ptr<RunState>> idle_states_;  // at most one per pass that ran at once
  // The converted weights of each type asked for so far, and the one passes use now (null: f32).
  std::vector<std::shared_ptr<const ReducedModel>> converted_;
  std::shared_ptr<const ReducedModel> reduced_;
  double conversion_ms_ = 0;
  // The f32 weights packed for linear_prepacked, at the first f32 pass where prepack_weights() says
  // so (engine/kernels/cpu.h), then kept; guarded by states_mutex_.
  std::shared_ptr<const PrepackedModel> prepacked_;
  std::vector<HeadIndex> masked_heads_;  // guarded by states_mutex_
};

}  // namespace ordo
