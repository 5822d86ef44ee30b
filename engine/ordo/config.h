// ordo: a model's config.json — the sizes and the choices PyTorch does not record. One of the
// engine's public headers (engine/ordo/, installed as <ordo/config.h>): Pipeline::config() returns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ordo {

// GELU is the exact erf form, GELUTanh the tanh approximation (ops.h has both equations).
enum class Activation { ReLU, GELU, GELUTanh };
// Sinusoidal and Learned add a vector to each token's before the first layer; Rope, Alibi (config name
// "alibi-pairs": heads in pairs, one looking back and one ahead, ordo's own scheme; "alibi" is read as
// it too, the name it had first) and AlibiSymmetric ("alibi-symmetric", one slope both ways, the form
// Press et al. give for encoders) add nothing there and act in every head's attention, as does
// T5Buckets ("t5-buckets": a learned bias per head and bucket of the offset j − i, Raffel et al. 2020)
// (engine/reference.h has their equations).
enum class PositionalEncoding { Sinusoidal, Learned, None, Rope, Alibi, AlibiSymmetric, T5Buckets };
// Whether positions are added to the token vectors (sinusoidal, learned).
inline bool added_to_input(PositionalEncoding p) {
  return p == PositionalEncoding::Sinusoidal || p == PositionalEncoding::Learned;
}
enum class PeLayout { Interleaved, Split };  // paper: sin at 2i, cos at 2i+1
// What sits on top of the encoder. MaskedLM: logits_t = h_t·Eᵀ + b (E the token embedding, tied;
// b the tensor head.bias), config "head": "mlm"; a Hugging Face checkpoint's head transforms h_t
// first (head_transform below).
enum class Head { None, MaskedLM };
// Whose tensor names model.safetensors uses: ordo's (nn.TransformerEncoder's), or a Hugging Face
// BertModel's (BERT, MiniLM, bge, e5, gte) or XLMRobertaModel's / RobertaModel's, which differ only in
// the position offset, or T5's encoder (T5EncoderModel, and the encoder of T5Model and
// T5ForConditionalGeneration: the fields below its family sets; docs/models.md), or MPNetModel's
// (all-mpnet-base-v2): RoBERTa's embeddings and BERT's layers under other names, plus T5's bucket bias
// in every layer's attention, after the 1/√dh (bucket_bias below), or DistilBertModel's (distilbert-base-uncased,
// multi-qa-distilbert-cos-v1): BERT's layers under other names, no token types, LayerNorm eps 1e-12.
enum class Family { Ordo, Bert, Roberta, T5, MPNet, DistilBert };
// A sentence-transformers Dense module (N_Dense/config.json, N_Dense/model.safetensors), applied to the
// pooled vector v in modules.json's order, after the pooling and before Normalize:
//   v' = act(v·Wᵀ + b)     W "linear.weight" (out_features, in_features), b "linear.bias" when "bias"
// act from "activation_function", the class sentence-transformers names: Identity, Tanh, ReLU, Sigmoid,
// GELU (the erf form, nn.GELU's default).
enum class DenseActivation { Identity, Tanh, ReLU, Sigmoid, GELU };
struct DenseModule {
  std::string path;  // its directory inside the model's, as modules.json says ("2_Dense")
  int in_features = 0, out_features = 0;
  bool bias = true;
  DenseActivation activation = DenseActivation::Identity;
};

// The normalization of every sublayer and of the final norm (reference::layer_norm, rms_norm):
// LayerNorm(x) = (x − mean(x)) / √(var(x) + eps)·γ + β, or RMSNorm(x) = x / √(mean(x²) + eps)·γ
// (Zhang and Sennrich 2019; T5's, with no β).
enum class Norm { Layer, RMS };

struct Config {
  // Sizes (required). Letters used throughout: V vocab, d model width, h heads, F feed-forward.
  int vocab_size = 0;  // V
  int d_model = 0;     // d
  int n_heads = 0;     // h; head size dh = d / h unless head_size says otherwise
  int d_ff = 0;        // F
  int n_layers = 0;

  Activation activation = Activation::ReLU;
  bool norm_first = false;  // false: post-LN (the paper's); true: pre-LN
  bool final_norm = false;  // a LayerNorm after the last layer
  double layer_norm_eps = 1e-5;

  PositionalEncoding positional_encoding = PositionalEncoding::Sinusoidal;  // required
  PeLayout pe_layout = PeLayout::Interleaved;
  double pe_base = 10000.0;  // the sinusoids' base; rope's too (θ_i = base^(−2i/dh))
  int max_positions = 0;     // learned positions only
  // t5-buckets only: "relative_attention_num_buckets" (a multiple of 4: half each side of the query, the
  // first half of each half one distance per bucket) and "relative_attention_max_distance" (the distance
  // the last bucket of a side starts at the latest; reference::relative_bucket has the function)
  int relative_buckets = 0;
  int relative_max_distance = 0;
  // MPNet only: the rows of its bucket table (config's relative_attention_num_buckets); transformers'
  // MPNet looks up relative_buckets = 32 of them whatever the table holds
  int relative_table_rows = 0;
  // alibi-pairs and alibi-symmetric only: "alibi_slopes", one slope per head for the side(s) it sees;
  // empty (the key absent): reference::alibi_head_slopes's default rule
  std::vector<double> alibi_slopes;
  bool scale_embedding = true;  // multiply token embeddings by √d

  std::string tokenizer = "tokenizer.model";
  bool add_bos = false;
  bool add_eos = false;

  Head head = Head::None;  // "head": "mlm", or the key absent
  // A Hugging Face masked-LM head (BertForMaskedLM's cls.predictions, XLMRobertaForMaskedLM's lm_head,
  // DistilBertForMaskedLM's vocab_transform, vocab_layer_norm and vocab_projector),
  // set by Model from the tensors it finds in the file. It transforms h_t before the product:
  //   u_t = LayerNorm(act(h_t·W_hᵀ + b_h))        (layer_norm_eps)
  //   logits_t = u_t·Dᵀ + b                       (D = E, tied, unless the file has a decoder of its own)
  bool head_transform = false;
  Activation head_activation = Activation::GELU;  // BERT: hidden_act; RoBERTa's lm_head: always the erf GELU
  std::string head_prefix;                        // "cls.predictions.", "lm_head." or DistilBERT's "vocab_"
  bool head_decoder = false;  // the file holds D as <head_prefix>decoder.weight (DistilBERT's vocab_projector.weight)

  // What a Hugging Face encoder adds (config.json with "model_type"; docs/models.md). With embedding_norm:
  //   x_t = LayerNorm(E[id_t] + P[t + position_offset] + T[0])     (T[0] only with token_types > 0)
  Family family = Family::Ordo;
  std::string weights_prefix;   // "", "bert." or "roberta.": before every tensor name (set by Model);
                                // T5: the embedding's, "shared." or "encoder.embed_tokens."
  bool embedding_norm = false;  // a LayerNorm (layer_norm_eps) over the embedding sum
  int token_types = 0;          // rows of the token-type table; row 0 (segment A) is added to every token
  int position_offset = 0;      // the learned row of position t is t + position_offset (RoBERTa: padding_idx + 1)
  // sentence-transformers' choices (modules.json, 1_Pooling/config.json, sentence_bert_config.json):
  // "mean", "first" (CLS), "max", "mean-sqrt-len", "weighted-mean", "last" (lib/ordo/ordo.h's Pooling), or ""
  // where the directory says nothing
  std::string pooling;
  std::vector<DenseModule> dense;  // Dense modules after the pooling, in order (each one's in_features the
                                   // width before it: d_model for the first)
  bool normalize = false;          // a Normalize module: vectors scaled to unit length
  int max_length = 0;              // max_seq_length: texts are cut to it (0: the position table's limit)
  std::string name;                // the model's name (the directory's, or config.json's _name_or_path)

  // What the T5 encoder adds (family T5; docs/models.md), each computed in engine/encoder.cpp and,
  // plainly, in engine/reference.cpp:
  Norm norm = Norm::Layer;      // RMS: every norm is x / √(mean(x²) + eps)·γ, no mean, no β
  bool gated_ffn = false;       // FFN(x) = (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ, V (F, d) a second input matrix
  bool scale_attention = true;  // false: softmax(q·kᵀ + b), without the 1/√dh
  int head_size = 0;            // dh when h·dh is not d (T5's d_kv); 0: d / h

  int head_dim() const { return head_size > 0 ? head_size : d_model / n_heads; }
  // Whether every head adds T5's bucket bias b_ij = W[h, bucket(j − i)] to its scores (when positions are
  // on): t5-buckets, and MPNet, whose learned positions are added to the input as well
  bool bucket_bias() const { return positional_encoding == PositionalEncoding::T5Buckets || family == Family::MPNet; }
  // Whether the learned positions count only the tokens that are not <pad> (RoBERTa's, MPNet's rule: the
  // pad id is position_offset − 1, and a <pad> takes that row itself)
  bool positions_skip_pads() const { return family == Family::Roberta || family == Family::MPNet; }
  // The width of q, k, v and of the heads' concatenation, h·dh: d, unless head_size makes it another
  int attention_width() const { return n_heads * head_dim(); }
};

// One attention head: its layer and its index in the layer, both from 0 (ordo --mask-head L,H).
struct HeadIndex {
  int layer = 0, head = 0;
};
// Heads switched off: a masked head's output A·v is zeros in its slot of the concatenation, so it
// adds nothing through W_o (b_o stays). Returns a flag per head, (n_layers · n_heads), true = masked;
// throws std::invalid_argument ("head L,H: this model has ...") for a head the model does not have.
std::vector<bool> head_mask(const Config& c, const std::vector<HeadIndex>& masked);

// Parses config.json text; `where` (the file name) prefixes every error, which names the key.
Config parse_config(const std::string& text, const std::string& where);
Config load_config(const std::string& path);
// The same from a config given by the user rather than found in a model directory: a pipe or a
// process substitution (ordo init --config <(...)) is read too, with the same size cap.
Config load_config_file_or_pipe(const std::string& path);

// The JSON form of a config (every key written), as `ordo init` stores it.
std::string config_to_json(const Config& c);

// Parses a Hugging Face config.json (model_type "bert", "roberta", "xlm-roberta", "t5", "mt5", "mpnet" or
// "distilbert") and the
// sentence-transformers files beside it in `dir`; picks the tokenizer file found in dir.
Config parse_hf_config(const std::string& text, const std::string& where, const std::string& dir);

// The longest sequence a model can run: max_positions − position_offset for a learned position
// table (at most max_length when set), else max_length, else no limit.
int position_limit(const Config& c);

// Token ids a model can run: each in [0, vocab_size), no more of them than position_limit(c).
// Throws InputError("input", ...) otherwise.
// Throws InputError for an id outside the vocabulary, or for a sequence whose positions (from
// first_position) run past a learned position table.
void check_ids(const Config& c, const std::vector<int32_t>& ids, int first_position = 0);

const char* to_string(Activation a);
const char* to_string(PositionalEncoding p);
const char* to_string(PeLayout l);
const char* to_string(Head h);             // "mlm" or "none"
const char* to_string(Family f);           // "ordo", "bert", "roberta", "t5", "mpnet" or "distilbert"
const char* to_string(Norm n);             // "layer" or "rms"
const char* to_string(DenseActivation a);  // "identity", "tanh", "relu", "sigmoid" or "gelu"

}  // namespace ordo
