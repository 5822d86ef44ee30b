// ordo: token ids in, hidden states out — nn.TransformerEncoder(batch_first=True) in eval mode.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ordo/engine/model.h>
#include <ordo/engine/trace.h>

namespace ordo {

struct EncodeOptions {
  bool positions = true;  // false: skip the positional encoding (the ablation behind `ordo compare`)
  // Called after each step with a view of the first sequence of the batch. Leave empty for speed.
  std::function<void(const Stage&)> observe;
};

// Hidden states of a padded batch: (B, S, d), S the longest length. Rows at and past a
// sequence's length are zero.
struct Hidden {
  int B = 0, S = 0, d = 0;
  std::vector<int> lengths;  // (B)
  std::vector<float> data;   // (B, S, d)
  const float* row(int b, int t) const { return data.data() + (size_t(b) * S + t) * d; }
};

// Activations for one (B, S), allocated once and reused while shapes do not grow.
struct RunState {
  std::vector<float> x;        // (T, d)   the residual stream
  std::vector<float> normed;   // (T, d)   a sublayer's normalised input (pre-LN)
  std::vector<float> qkv;      // (T, 3d)  queries | keys | values, heads side by side
  std::vector<float> context;  // (T, d)   attention output, heads concatenated
  std::vector<float> sub;      // (T, d)   a sublayer's output, before the residual add
  std::vector<float> ff;       // (T, F)   feed-forward hidden layer
  std::vector<float> probs;    // (threads, S, S) attention weights, one head per thread
  std::vector<float> pe;       // (S, d)   positional encodings, kept between calls
};

class Encoder {
 public:
  explicit Encoder(const Model& model) : model_(model) {}

  // ids: B sequences of token ids in [0, V). Throws InputError for an id out of range, a
  // sequence past a learned position table, or a batch whose working memory (activation_bytes)
  // is more than half of this machine's.
  Hidden forward(const std::vector<std::vector<int32_t>>& ids, const EncodeOptions& options = {});

  // Bytes of activations forward() needs for a B × S batch.
  uint64_t activation_bytes(uint64_t B, uint64_t S) const;

 private:
  // x_t = E[id_t]·√d + PE(t)  into s_.x (T, d)
  void embed(const std::vector<std::vector<int32_t>>& ids, int S, const EncodeOptions& options);
  // x = sublayer(SelfAttention), then x = sublayer(FFN), FFN(x) = act(x·W1ᵀ + b1)·W2ᵀ + b2, on s_.x (T, d)
  void encoder_layer(int l, int B, int S, const std::vector<int>& lengths, const EncodeOptions& options);
  // The sublayer connection on s_.x (T, d), the one place where post-LN and pre-LN differ:
  //   post-LN: x = LayerNorm(x + f(x));  pre-LN: x = x + f(LayerNorm(x)).
  // f(in) reads its input (T, d) and leaves its output in s_.sub (T, d).
  void sublayer(int T, const float* gamma, const float* beta, const std::function<void(const float* in)>& f);
  // MultiHead(in) = Concat(head_1 .. head_h)·W_oᵀ + b_o, head_i = softmax(q_i·k_iᵀ/√dh)·v_i
  // in (T, d) -> s_.sub (T, d), through s_.qkv (T, 3d), s_.probs (S, S) and s_.context (T, d)
  void self_attention(const LayerWeights& w, const float* in, int layer, int B, int S, const std::vector<int>& lengths,
                      const EncodeOptions& options);

  // Hands a view of the first sequence's rows to options.observe, if set.
  void observe(const EncodeOptions& options, StageKind kind, int layer, int head, const float* data, int rows, int cols,
               int stride) const;

  const Model& model_;
  RunState s_;
};

// Threads for the matrix work, the caller included (OpenBLAS runs single-threaded inside each).
// 0: one per core.
void set_num_threads(int n);
int num_threads();

}  // namespace ordo
