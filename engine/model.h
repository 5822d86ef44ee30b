// ordo: a model's weights, read from model.safetensors and checked against its config.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ordo/config.h>
#include <ordo/engine/safetensors.h>

namespace ordo {

// One nn.TransformerEncoderLayer, under PyTorch's names. A = h·dh, the attention width (d but for a T5
// encoder whose d_kv says otherwise). A T5 encoder has no biases (they are null) and RMSNorms (no β).
struct LayerWeights {
  const float* in_proj_weight = nullptr;    // (3A, d)  rows [0,A) Wq, [A,2A) Wk, [2A,3A) Wv
  const float* in_proj_bias = nullptr;      // (3A)
  const float* out_proj_weight = nullptr;   // (d, A)
  const float* out_proj_bias = nullptr;     // (d)
  const float* linear1_weight = nullptr;    // (F, d)
  const float* linear1_bias = nullptr;      // (F)
  const float* linear1_v_weight = nullptr;  // (F, d) gated_ffn only: V of (act(x·W1ᵀ) ⊙ x·Vᵀ)
  const float* linear2_weight = nullptr;    // (d, F)
  const float* linear2_bias = nullptr;      // (d)
  const float* norm1_weight = nullptr;      // (d)
  const float* norm1_bias = nullptr;        // (d)
  const float* norm2_weight = nullptr;      // (d)
  const float* norm2_bias = nullptr;        // (d)
  // t5-buckets only: the model's one table of biases (h, relative_buckets), Weights::position_bias,
  // the same pointer in every layer (T5 shares it across layers)
  const float* position_bias = nullptr;
};

struct Weights {
  const float* embedding = nullptr;              // (V, d)
  const float* position_embedding = nullptr;     // (max_positions, d), learned positions only
  const float* position_bias = nullptr;          // (h, relative_buckets), t5-buckets only: one for all layers
  std::vector<LayerWeights> layers;              // n_layers
  const float* norm_weight = nullptr;            // (d), final_norm only
  const float* norm_bias = nullptr;              // (d)
  const float* head_bias = nullptr;              // (V), "head": "mlm" only; the head's matrix is `embedding`
  const float* token_type_embedding = nullptr;   // (token_types, d); row 0 is added (Hugging Face encoders)
  const float* embedding_norm_weight = nullptr;  // (d), embedding_norm only
  const float* embedding_norm_bias = nullptr;    // (d)
  // A Hugging Face masked-LM head (config head_transform): u = LayerNorm(act(h·W_hᵀ + b_h)), logits = u·Dᵀ + b
  const float* head_dense_weight = nullptr;  // W_h (d, d)
  const float* head_dense_bias = nullptr;    // b_h (d)
  const float* head_norm_weight = nullptr;   // (d)
  const float* head_norm_bias = nullptr;     // (d)
  const float* head_decoder = nullptr;       // D (V, d): `embedding` when tied (ordo's head: always)
};

// The tensor names and shapes a config asks for, in file order; at most `limit` of them (a
// config can ask for millions of layers, and the list is built before the file is checked).
struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
};
std::vector<TensorSpec> expected_tensors(const Config& c, size_t limit = SIZE_MAX);

// Σ elements of expected_tensors(c), computed without listing them; throws InputError(where) on
// 64-bit overflow.
uint64_t expected_parameters(const Config& c, const std::string& where);

// A Hugging Face directory (or a Dense module's) with pytorch_model.bin and no model.safetensors: throws
// the InputError that gives the one-line conversion. Nothing otherwise.
void require_safetensors(const std::string& dir);

class Model {
 public:
  // Reads dir/config.json and dir/model.safetensors. F32 tensors stay in the file's image in memory
  // (copied only if the file misaligns them); F16 and BF16 are widened to F32 once, here. A Hugging
  // Face encoder's separate query, key and value matrices are copied side by side into one (3d, d)
  // in_proj, once, here (3d² + 3d floats a layer); everything else of it is read in place too.
  static Model load(const std::string& dir);
  // The same from a config already in hand and a weights file.
  Model(Config config, const std::string& weights_path);

  const Config& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const SafeTensors& file() const { return file_; }
  uint64_t parameter_count() const { return parameters_; }
  std::string dir;  // where it was loaded from ("" if not from a directory)

 private:
  Config config_;
  SafeTensors file_;
  Weights weights_;
  uint64_t parameters_ = 0;
  std::vector<std::vector<float>> widened_;  // storage for converted or realigned tensors
};

}  // namespace ordo
