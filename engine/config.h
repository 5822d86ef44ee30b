// ordo: a model's config.json — the sizes and the choices PyTorch does not record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ordo {

enum class Activation { ReLU, GELU };  // GELU is the exact erf form
// Sinusoidal and Learned add a vector to each token's before the first layer; Rope, Alibi (heads in
// pairs, one looking back and one ahead) and AlibiSymmetric (one slope both ways) add nothing there and
// act in every head's attention (engine/reference.h has their equations).
enum class PositionalEncoding { Sinusoidal, Learned, None, Rope, Alibi, AlibiSymmetric };
// Whether positions are added to the token vectors (sinusoidal, learned).
inline bool added_to_input(PositionalEncoding p) {
  return p == PositionalEncoding::Sinusoidal || p == PositionalEncoding::Learned;
}
enum class PeLayout { Interleaved, Split };  // paper: sin at 2i, cos at 2i+1
// What sits on top of the encoder. MaskedLM: logits_t = h_t·Eᵀ + b (E the token embedding, tied;
// b the tensor head.bias), config "head": "mlm".
enum class Head { None, MaskedLM };

struct Config {
  // Sizes (required). Letters used throughout: V vocab, d model width, h heads, F feed-forward.
  int vocab_size = 0;  // V
  int d_model = 0;     // d
  int n_heads = 0;     // h; head size dh = d / h
  int d_ff = 0;        // F
  int n_layers = 0;

  Activation activation = Activation::ReLU;
  bool norm_first = false;  // false: post-LN (the paper's); true: pre-LN
  bool final_norm = false;  // a LayerNorm after the last layer
  double layer_norm_eps = 1e-5;

  PositionalEncoding positional_encoding = PositionalEncoding::Sinusoidal;  // required
  PeLayout pe_layout = PeLayout::Interleaved;
  double pe_base = 10000.0;     // the sinusoids' base; rope's too (θ_i = base^(−2i/dh))
  int max_positions = 0;        // learned positions only
  bool scale_embedding = true;  // multiply token embeddings by √d

  std::string tokenizer = "tokenizer.model";
  bool add_bos = false;
  bool add_eos = false;

  Head head = Head::None;  // "head": "mlm", or the key absent

  int head_dim() const { return d_model / n_heads; }
};

// Parses config.json text; `where` (the file name) prefixes every error, which names the key.
Config parse_config(const std::string& text, const std::string& where);
Config load_config(const std::string& path);
// The same from a config given by the user rather than found in a model directory: a pipe or a
// process substitution (ordo init --config <(...)) is read too, with the same size cap.
Config load_config_file_or_pipe(const std::string& path);

// The JSON form of a config (every key written), as `ordo init` stores it.
std::string config_to_json(const Config& c);

// The longest sequence a model can run: max_positions for a learned position table, else no limit.
int position_limit(const Config& c);

// Token ids a model can run: each in [0, vocab_size), no more of them than position_limit(c).
// Throws InputError("input", ...) otherwise.
// Throws InputError for an id outside the vocabulary, or for a sequence whose positions (from
// first_position) run past a learned position table.
void check_ids(const Config& c, const std::vector<int32_t>& ids, int first_position = 0);

const char* to_string(Activation a);
const char* to_string(PositionalEncoding p);
const char* to_string(PeLayout l);
const char* to_string(Head h);  // "mlm" or "none"

}  // namespace ordo
