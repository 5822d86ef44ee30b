#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <ordo/config.h>
#include <ordo/errors.h>

#include "common/regular_file.h"
#include "engine/strict_json.h"

namespace ordo {

using nlohmann::json;

namespace {

// The names a file gives a setting, each with what it means; to_string (below) gives a value's first name.
template <class E, size_t N>
using Names = std::pair<const char*, E>[N];
template <class E, size_t N>
const char* name_of(const Names<E, N>& names, E e, const char* otherwise) {
  for (const auto& [n, v] : names)
    if (v == e) return n;
  return otherwise;
}

using Act = Activation;
using PE = PositionalEncoding;
using Dense = DenseActivation;
const Names<Act, 3> kActivations = {{"relu", Act::ReLU}, {"gelu", Act::GELU}, {"gelu-tanh", Act::GELUTanh}};
// transformers' names (hidden_act, DistilBERT's activation): "gelu" is the erf form, the others tanh
const Names<Act, 5> kHfActivations = {{"gelu", Act::GELU},
                                      {"relu", Act::ReLU},
                                      {"gelu_new", Act::GELUTanh},
                                      {"gelu_pytorch_tanh", Act::GELUTanh},
                                      {"gelu_fast", Act::GELUTanh}};
// "alibi" is the name alibi-pairs had before, kept so that a model written then (models/position-alibi)
// loads with the meaning it was trained with; the paper's form for encoders is alibi-symmetric.
const Names<PE, 8> kPositionalEncodings = {{"sinusoidal", PE::Sinusoidal},
                                           {"learned", PE::Learned},
                                           {"none", PE::None},
                                           {"rope", PE::Rope},
                                           {"alibi-pairs", PE::Alibi},
                                           {"alibi-symmetric", PE::AlibiSymmetric},
                                           {"alibi", PE::Alibi},
                                           {"t5-buckets", PE::T5Buckets}};
// config.json's model_type
const Names<Family, 7> kFamilies = {
    {"bert", Family::Bert}, {"roberta", Family::Roberta}, {"xlm-roberta", Family::Roberta},  {"t5", Family::T5},
    {"mt5", Family::T5},    {"mpnet", Family::MPNet},     {"distilbert", Family::DistilBert}};
// a Dense module's activation_function: the class sentence-transformers saves by its full name
// (util.fullname) and builds with no arguments; and the short names to_string gives
const Names<Dense, 5> kTorchActivations = {{"torch.nn.modules.linear.Identity", Dense::Identity},
                                           {"torch.nn.modules.activation.Tanh", Dense::Tanh},
                                           {"torch.nn.modules.activation.ReLU", Dense::ReLU},
                                           {"torch.nn.modules.activation.Sigmoid", Dense::Sigmoid},
                                           {"torch.nn.modules.activation.GELU", Dense::GELU}};
const Names<Dense, 5> kDenseActivations = {{"identity", Dense::Identity},
                                           {"tanh", Dense::Tanh},
                                           {"relu", Dense::ReLU},
                                           {"sigmoid", Dense::Sigmoid},
                                           {"gelu", Dense::GELU}};

// Sizes beyond this are not models but mistakes (and would overflow int products of two sizes
// only well past it); they are rejected before anything is sized from them.
constexpr int64_t kMaxSize = 1 << 24;

struct Reader {
  const json& j;
  const std::string& where;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }

  int size(const char* key, bool required, int fallback) const {
    if (!has(key)) {
      if (required) throw InputError(where, std::string("missing required key \"") + key + "\"");
      return fallback;
    }
    const json& v = j[key];
    // 64 and 64.0 are the same size; 64.5, "64" and true are not sizes.
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                    v.get<double>() == std::floor(v.get<double>()));
    if (!integral)
      throw InputError(where, std::string("key \"") + key + "\" must be a positive integer, got " + brief(v));
    const double value = v.get<double>();
    if (value <= 0) throw InputError(where, std::string("key \"") + key + "\" must be positive, got " + brief(v));
    if (value > kMaxSize)
      throw InputError(where, std::string("key \"") + key + "\" is " + brief(v) + ", above the limit of " +
                                  std::to_string(kMaxSize));
    const int64_t n = static_cast<int64_t>(value);
    return static_cast<int>(n);
  }

  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean())
      throw InputError(where, std::string("key \"") + key + "\" must be true or false, got " + brief(j[key]));
    return j[key].get<bool>();
  }

  double positive(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = j[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw InputError(where, std::string("key \"") + key + "\" must be a positive number, got " + brief(v));
    return v.get<double>();
  }

  // An encoder's five sizes under this file's names for them (vocabulary, width, heads, feed-forward
  // width, layers); the width must split evenly into the heads.
  void sizes(Config& c, const char* const (&keys)[5]) const {
    int* const to[] = {&c.vocab_size, &c.d_model, &c.n_heads, &c.d_ff, &c.n_layers};
    for (int i = 0; i < 5; ++i) *to[i] = size(keys[i], true, 0);
    if (c.d_model % c.n_heads != 0)
      throw InputError(where, std::string("key \"") + keys[1] + "\" (" + std::to_string(c.d_model) +
                                  ") must be divisible by \"" + keys[2] + "\" (" + std::to_string(c.n_heads) + ")");
  }

  std::string choice(const char* key, const std::vector<const char*>& allowed, const char* fallback,
                     bool required = false) const {
    std::string options;
    for (const char* a : allowed) options += std::string(options.empty() ? "" : " | ") + "\"" + a + "\"";
    if (!has(key)) {
      if (required) throw InputError(where, std::string("missing required key \"") + key + "\" (" + options + ")");
      return fallback;
    }
    const json& v = j[key];
    if (v.is_string())
      for (const char* a : allowed)
        if (v.get<std::string>() == a) return a;
    throw InputError(where, std::string("key \"") + key + "\" must be " + options + ", got " + brief(v));
  }
  // choice over a table of names and what each means: the value of the name the file gives, `fallback`
  // where the key is absent.
  template <class E, size_t N>
  E pick(const char* key, const Names<E, N>& names, E fallback, bool required = false) const {
    std::vector<const char*> allowed;
    for (const auto& n : names) allowed.push_back(n.first);
    const std::string name = choice(key, allowed, "", required);
    for (const auto& [n, v] : names)
      if (name == n) return v;
    return fallback;
  }
};

}  // namespace

Config parse_config(const std::string& text, const std::string& where) {
  const StrictJson j = parse_strict_json(text.data(), text.data() + text.size(), where, "");
  if (!j.is_object()) throw InputError(where, "holds " + brief(j) + ", not a JSON object");
  Reader r{j, where};

  Config c;
  r.sizes(c, {"vocab_size", "d_model", "n_heads", "d_ff", "n_layers"});

  c.activation = r.pick("activation", kActivations, Activation::ReLU);
  c.norm_first = r.flag("norm_first", false);
  c.final_norm = r.flag("final_norm", false);
  c.layer_norm_eps = r.positive("layer_norm_eps", 1e-5);
  if (static_cast<float>(c.layer_norm_eps) == 0.0f)  // LayerNorm runs in float: a constant row would give 0/0
    throw InputError(where,
                     "key \"layer_norm_eps\" is " + brief(j.at("layer_norm_eps")) + ", which rounds to 0 as a float");

  c.positional_encoding = r.pick("positional_encoding", kPositionalEncodings, PositionalEncoding::None, true);
  c.pe_layout = r.choice("pe_layout", {"interleaved", "split"}, "interleaved") == std::string("split")
                    ? PeLayout::Split
                    : PeLayout::Interleaved;
  c.pe_base = r.positive("pe_base", 10000.0);
  if (c.pe_base < 1e-100)  // t / base^(2i/d) would overflow to infinity, and sin(inf) is NaN
    throw InputError(where,
                     "key \"pe_base\" is " + brief(j.at("pe_base")) + ", too small for finite positional encodings");
  c.max_positions = r.size("max_positions", c.positional_encoding == PositionalEncoding::Learned, 0);
  const bool buckets = c.positional_encoding == PositionalEncoding::T5Buckets;
  c.relative_buckets = r.size("relative_attention_num_buckets", buckets, 0);
  c.relative_max_distance = r.size("relative_attention_max_distance", buckets, 0);
  if (buckets && c.relative_buckets % 4 != 0)
    throw InputError(where, "key \"relative_attention_num_buckets\" (" + std::to_string(c.relative_buckets) +
                                ") must be a multiple of 4 (half the buckets each side, a half's first half exact)");
  if (buckets && c.relative_max_distance <= c.relative_buckets / 4)
    throw InputError(where, "key \"relative_attention_max_distance\" (" + std::to_string(c.relative_max_distance) +
                                ") must be above " + std::to_string(c.relative_buckets / 4) +
                                ", the exact distances of " + std::to_string(c.relative_buckets) + " buckets");
  if (r.has("alibi_slopes")) {
    const json& v = j["alibi_slopes"];
    if (c.positional_encoding != PositionalEncoding::Alibi &&
        c.positional_encoding != PositionalEncoding::AlibiSymmetric)
      throw InputError(where, "key \"alibi_slopes\" is for \"alibi-pairs\" or \"alibi-symmetric\", not \"" +
                                  j["positional_encoding"].get<std::string>() + "\"");
    bool ok = v.is_array() && v.size() == size_t(c.n_heads);
    for (size_t k = 0; ok && k < v.size(); ++k)
      ok = v[k].is_number() && v[k].get<double>() > 0 && std::isfinite(v[k].get<double>());
    if (!ok)
      throw InputError(where, "key \"alibi_slopes\" must be a list of " + std::to_string(c.n_heads) +
                                  " positive numbers, one per head, got " + brief(v));
    for (const json& m : v) c.alibi_slopes.push_back(m.get<double>());
  }
  c.scale_embedding = r.flag("scale_embedding", true);

  if (r.has("tokenizer")) {
    const json& t = j["tokenizer"];
    if (!t.is_string() || t.get<std::string>().empty())
      throw InputError(where, "key \"tokenizer\" must be a file name, got " + brief(t));
    c.tokenizer = t.get<std::string>();
    if (c.tokenizer.find_first_of(std::string("/\0", 2)) != std::string::npos || c.tokenizer == "." ||
        c.tokenizer == "..")
      throw InputError(where, "key \"tokenizer\" must name a file inside the model directory, got " + brief(t));
    if (c.tokenizer == "config.json" || c.tokenizer == "model.safetensors")  // the tokenizer cannot be either
      throw InputError(where, "key \"tokenizer\" names " + brief(t) + ", a file of the model that is not a tokenizer");
  }
  c.add_bos = r.flag("add_bos", false);
  c.add_eos = r.flag("add_eos", false);

  // Only "mlm" or no key at all: a null here is not "no head" but a file that meant something else.
  if (j.contains("head")) {
    const json& h = j["head"];
    if (!h.is_string() || h.get<std::string>() != "mlm")
      throw InputError(where, "key \"head\" must be \"mlm\" (a masked-language-model head) or absent, got " + brief(h));
    c.head = Head::MaskedLM;
  }
  return c;
}

constexpr uint64_t kMaxConfigBytes = 16 << 20;  // a config is a few hundred bytes

namespace {

StrictJson read_json(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxConfigBytes, "a JSON file");
  return parse_strict_json(text.data(), text.data() + text.size(), path, "");
}
}  // namespace

namespace {
// What every Hugging Face directory adds to its config.json: the tokenizer file, sentence-transformers'
// modules, the model's name.
Config hf_directory(Config c, const std::string& dir);

// T5's encoder (model_type "t5" or "mt5": T5EncoderModel, T5Model, T5ForConditionalGeneration; only the
// encoder is read). Pre-norm with RMSNorm and a final one, no biases, no 1/√dh, the bucket table of
// block 0 for every layer, h·d_kv wide attention, and its sizes and defaults under T5Config's names.
void parse_t5(const Reader& r, Config& c) {
  c.family = Family::T5;
  c.vocab_size = r.size("vocab_size", true, 0);
  c.d_model = r.size("d_model", true, 0);
  c.n_heads = r.size("num_heads", true, 0);
  c.head_size = r.size("d_kv", true, 0);
  c.d_ff = r.size("d_ff", true, 0);
  c.n_layers = r.size("num_layers", true, 0);
  // transformers' names: "gated-" before the activation makes the gated FFN; "gated-gelu" is the tanh
  // GELU (transformers maps it to gelu_new), a plain "gelu" the erf one
  const std::string proj = r.choice("feed_forward_proj",
                                    {"relu", "gated-relu", "gelu", "gated-gelu", "gelu_new", "gated-gelu_new",
                                     "gelu_pytorch_tanh", "gated-gelu_pytorch_tanh", "gelu_fast", "gated-gelu_fast"},
                                    "relu");
  c.gated_ffn = proj.rfind("gated-", 0) == 0;
  const std::string act = c.gated_ffn ? proj.substr(6) : proj;
  c.activation = act == "relu"                   ? Activation::ReLU
                 : act == "gelu" && !c.gated_ffn ? Activation::GELU
                                                 : Activation::GELUTanh;
  c.layer_norm_eps = r.positive("layer_norm_epsilon", 1e-6);
  if (static_cast<float>(c.layer_norm_eps) == 0.0f)  // the norms run in float: a zero row would give 0/0
    throw InputError(r.where, "key \"layer_norm_epsilon\" is " + brief(r.j.at("layer_norm_epsilon")) +
                                  ", which rounds to 0 as a float");
  c.positional_encoding = PositionalEncoding::T5Buckets;
  c.relative_buckets = r.size("relative_attention_num_buckets", false, 32);
  c.relative_max_distance = r.size("relative_attention_max_distance", false, 128);
  if (c.relative_buckets % 4 != 0 || c.relative_max_distance <= c.relative_buckets / 4)
    throw InputError(r.where, "relative_attention_num_buckets " + std::to_string(c.relative_buckets) +
                                  " and relative_attention_max_distance " + std::to_string(c.relative_max_distance) +
                                  ": ordo needs a multiple of 4 buckets and a distance above a quarter of them");
  c.norm = Norm::RMS;
  c.norm_first = true;
  c.final_norm = true;
  c.scale_attention = false;
  c.scale_embedding = false;
  c.add_eos = true;  // ... </s>, no BOS
}

// DistilBERT (model_type "distilbert": DistilBertModel, DistilBertForMaskedLM): BERT's post-LN layers
// and learned positions from row 0, under DistilBertConfig's names; no token-type table; every
// LayerNorm's eps fixed at 1e-12 (transformers' DistilBERT takes none from the config). With
// sinusoidal_pos_embds the position table is filled with sinusoids at init and saved like a learned
// one, so it is read from the weights either way.
void parse_distilbert(const Reader& r, Config& c) {
  c.family = Family::DistilBert;
  r.sizes(c, {"vocab_size", "dim", "n_heads", "hidden_dim", "n_layers"});
  c.activation = r.pick("activation", kHfActivations, Activation::GELU);  // transformers' get_activation names
  r.flag("sinusoidal_pos_embds", false);  // a true or false, whichever: the table is in the file
  c.layer_norm_eps = 1e-12;
  c.positional_encoding = PositionalEncoding::Learned;
  c.max_positions = r.size("max_position_embeddings", true, 0);
  c.scale_embedding = false;
  c.embedding_norm = true;
  c.token_types = 0;
  c.add_bos = c.add_eos = true;  // [CLS] ... [SEP]
}
}  // namespace

Config parse_hf_config(const std::string& text, const std::string& where, const std::string& dir) {
  const StrictJson j = parse_strict_json(text.data(), text.data() + text.size(), where, "");
  if (!j.is_object()) throw InputError(where, "holds " + brief(j) + ", not a JSON object");
  Reader r{j, where};
  Config c;
  c.family = r.pick("model_type", kFamilies, Family::Ordo, true);
  if (c.family == Family::T5) {
    parse_t5(r, c);
    return hf_directory(c, dir);
  }
  if (c.family == Family::DistilBert) {
    parse_distilbert(r, c);
    return hf_directory(c, dir);
  }
  r.sizes(c, {"vocab_size", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers"});
  c.activation = r.pick("hidden_act", kHfActivations, Activation::GELU);
  c.layer_norm_eps = r.positive("layer_norm_eps", 1e-12);
  r.choice("position_embedding_type", {"absolute"}, "absolute");  // relative_key and others: not supported
  c.positional_encoding = PositionalEncoding::Learned;
  c.max_positions = r.size("max_position_embeddings", true, 0);
  c.scale_embedding = false;
  c.embedding_norm = true;
  if (c.family == Family::MPNet) {
    // MPNetModel: no token-type table; padding_idx 1 whatever pad_token_id says (MPNetEmbeddings fixes it),
    // so positions from row 2; and T5's buckets in every layer, 32 of them up to distance 128 (the
    // defaults of transformers' compute_position_bias, which the config does not reach), from a table of
    // relative_attention_num_buckets rows
    c.token_types = 0;
    c.position_offset = 2;
    c.relative_buckets = 32;
    c.relative_max_distance = 128;
    c.relative_table_rows = r.size("relative_attention_num_buckets", false, 32);
    if (c.relative_table_rows < c.relative_buckets)
      throw InputError(where, "key \"relative_attention_num_buckets\" is " + std::to_string(c.relative_table_rows) +
                                  ", fewer than the 32 buckets MPNet looks up");
    if (c.position_offset >= c.max_positions)
      throw InputError(where, "max_position_embeddings " + std::to_string(c.max_positions) +
                                  " leaves no position after MPNet's first two rows");
    c.add_bos = c.add_eos = true;  // <s> ... </s>
    return hf_directory(c, dir);
  }
  c.token_types = j.contains("type_vocab_size") && j["type_vocab_size"] == 0 ? 0 : r.size("type_vocab_size", false, 2);
  if (c.family == Family::Roberta) {  // fairseq's positions: 0 .. padding_idx belong to no token
    const int pad = j.contains("pad_token_id") && j["pad_token_id"] == 0 ? 0 : r.size("pad_token_id", false, 1);
    c.position_offset = pad + 1;
    if (c.position_offset >= c.max_positions)
      throw InputError(where, "pad_token_id " + std::to_string(pad) +
                                  " leaves no position of max_position_embeddings " + std::to_string(c.max_positions));
  }
  c.add_bos = c.add_eos = true;  // [CLS] ... [SEP], <s> ... </s>
  return hf_directory(c, dir);
}

namespace {
// sentence-transformers' Pooling config (N_Pooling/config.json): the one mode set true, by ordo's name for
// it. Several at once (which sentence-transformers concatenates, in its fixed order) are refused.
std::string parse_pooling(const std::string& where) {
  const StrictJson p = read_json(where);
  static const std::pair<const char*, const char*> kModes[] = {{"pooling_mode_cls_token", "first"},
                                                               {"pooling_mode_max_tokens", "max"},
                                                               {"pooling_mode_mean_tokens", "mean"},
                                                               {"pooling_mode_mean_sqrt_len_tokens", "mean-sqrt-len"},
                                                               {"pooling_mode_weightedmean_tokens", "weighted-mean"},
                                                               {"pooling_mode_lasttoken", "last"}};
  std::string pooling, keys;
  int on = 0;
  for (const auto& [key, name] : kModes)
    if (p.is_object() && p.contains(key) && p[key] == true) {
      pooling = name;
      keys += std::string(on++ ? ", " : "") + key;
    }
  if (on == 0) throw InputError(where, "sets no pooling_mode_... key true: it asks for no pooling ordo knows");
  if (on > 1)
    throw InputError(where, "asks for " + std::to_string(on) + " poolings at once (" + keys +
                                "), which sentence-transformers concatenates; ordo pools one way at a time");
  return pooling;
}

// A Dense module's config.json (in dir, modules.json's `path`); `width`: the numbers before it.
DenseModule parse_dense(const std::string& dir, const std::string& path, int width) {
  const std::string where = dir + "/config.json";
  if (!path_exists(where))
    throw InputError(where, "cannot open (a Dense module's in_features, out_features, bias, activation_function)");
  const StrictJson j = read_json(where);
  if (!j.is_object()) throw InputError(where, "holds " + brief(j) + ", not a JSON object");
  const Reader r{j, where};
  DenseModule d;
  d.path = path;
  d.in_features = r.size("in_features", true, 0);
  d.out_features = r.size("out_features", true, 0);
  d.bias = r.flag("bias", true);
  d.activation = r.pick("activation_function", kTorchActivations, DenseActivation::Identity, true);
  if (d.in_features != width)
    throw InputError(where, "key \"in_features\" is " + std::to_string(d.in_features) +
                                ", but the vector before it has " + std::to_string(width) + " numbers");
  return d;
}

Config hf_directory(Config c, const std::string& dir) {
  const std::string base = dir.empty() ? "." : dir;
  if (path_exists(base + "/vocab.txt"))
    c.tokenizer = "vocab.txt";
  else if (path_exists(base + "/sentencepiece.bpe.model"))
    c.tokenizer = "sentencepiece.bpe.model";
  else if (path_exists(base + "/spiece.model"))  // T5's: pad 0, </s> 1, <unk> 2, as sentencepiece numbers them
    c.tokenizer = "spiece.model";
  else if (path_exists(base + "/tokenizer.model"))
    c.tokenizer = "tokenizer.model";
  else if (path_exists(base + "/tokenizer.json"))  // a fast tokenizer: WordPiece alone, or byte-level BPE
    c.tokenizer = "tokenizer.json";
  else if (path_exists(base + "/vocab.json"))  // RoBERTa's byte-level BPE, merges.txt beside it
    c.tokenizer = "vocab.json";
  else
    throw InputError(base,
                     "has no tokenizer ordo reads: vocab.txt or tokenizer.json (WordPiece or byte-level BPE), "
                     "vocab.json + merges.txt (byte-level BPE), sentencepiece.bpe.model "
                     "(XLM-R), spiece.model (T5) or tokenizer.model (sentencepiece)");

  // sentence-transformers: the modules in their order (Transformer, Pooling, Dense ..., Normalize), the
  // pooling's mode, each Dense module's shape and activation, whether vectors are normalized
  if (path_exists(base + "/modules.json")) {
    const std::string where = base + "/modules.json";
    const StrictJson modules = read_json(where);
    bool pooled = false;
    if (modules.is_array())
      for (const json& m : modules) {
        if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) continue;
        const std::string t = m["type"].get<std::string>();
        const std::string path = m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
        const bool inside = !path.empty() && path[0] != '/' && path.find("..") == std::string::npos;
        if (t == "sentence_transformers.models.Normalize") c.normalize = true;
        if (t == "sentence_transformers.models.Dense") {
          if (!pooled || c.normalize)
            throw InputError(where, std::string("has a Dense module ") +
                                        (c.normalize ? "after Normalize" : "before the pooling") +
                                        "; ordo applies Dense modules to the pooled vector, before Normalize");
          if (!inside)
            throw InputError(where, "names a Dense module's directory \"" + path +
                                        "\", which is not a directory inside the model's");
          c.dense.push_back(
              parse_dense(base + "/" + path, path, c.dense.empty() ? c.d_model : c.dense.back().out_features));
        }
        if (t == "sentence_transformers.models.Pooling") {
          pooled = true;
          if (inside && path_exists(base + "/" + path + "/config.json"))
            c.pooling = parse_pooling(base + "/" + path + "/config.json");
        }
      }
  }
  if (path_exists(base + "/sentence_bert_config.json")) {
    const StrictJson sb = read_json(base + "/sentence_bert_config.json");
    if (sb.is_object() && sb.contains("max_seq_length") && sb["max_seq_length"].is_number_integer() &&
        sb["max_seq_length"].get<int64_t>() > 0)
      c.max_length = int(std::min<int64_t>(sb["max_seq_length"].get<int64_t>(), kMaxSize));
  }
  // The model's name: its directory's (config.json's _name_or_path is often the model it was tuned
  // from); a directory called "model" (as a Python package ships one) takes its parent's.
  std::string d = base;
  for (int up = 0; up < 2; ++up) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    const size_t slash = d.find_last_of('/');
    c.name = d.substr(slash == std::string::npos ? 0 : slash + 1);
    if (c.name != "model" || slash == std::string::npos) break;
    d = d.substr(0, slash);
  }
  return c;
}
}  // namespace

Config load_config(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    throw InputError(path, "cannot open (a model directory holds config.json, model.safetensors and tokenizer.model)");
  const std::string text = read_regular_file(path, kMaxConfigBytes, "a config");
  // A Hugging Face directory's config.json says what it is in "model_type"; ordo's never has that key.
  if (text.find("\"model_type\"") != std::string::npos) {
    const StrictJson j = parse_strict_json(text.data(), text.data() + text.size(), path, "");
    if (j.is_object() && j.contains("model_type")) {
      const size_t slash = path.find_last_of('/');
      return parse_hf_config(text, path, slash == std::string::npos ? "." : path.substr(0, slash));
    }
  }
  return parse_config(text, path);
}

Config load_config_file_or_pipe(const std::string& path) {
  return parse_config(read_file_or_pipe(path, kMaxConfigBytes, "a config"), path);
}

int position_limit(const Config& c) {
  const int table =
      c.positional_encoding == PositionalEncoding::Learned ? c.max_positions - c.position_offset : INT_MAX;
  return c.max_length > 0 ? std::min(table, c.max_length) : table;
}

void check_ids(const Config& c, const std::vector<int32_t>& ids, int first_position) {
  for (int32_t id : ids)
    if (id < 0 || id >= c.vocab_size)
      throw InputError("input", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                    std::to_string(c.vocab_size) + ")");
  if (ids.size() + size_t(first_position) > size_t(position_limit(c)))
    throw InputError(
        "input", "a text of " + std::to_string(ids.size()) + " tokens" +
                     (first_position ? " from position " + std::to_string(first_position) : "") +
                     " is longer than the model's " +
                     (c.max_length > 0 && c.max_length == position_limit(c)
                          ? "max_seq_length (" + std::to_string(c.max_length) + ")"
                          : "learned positions (max_positions = " + std::to_string(c.max_positions) +
                                (c.position_offset ? ", from row " + std::to_string(c.position_offset) : "") + ")"));
}

const char* to_string(Activation a) {
  return name_of(kActivations, a, "relu");
}
const char* to_string(PositionalEncoding p) {
  return name_of(kPositionalEncodings, p, "none");
}
const char* to_string(Family f) {
  return name_of(kFamilies, f, "ordo");
}
const char* to_string(DenseActivation a) {
  return name_of(kDenseActivations, a, "identity");
}
const char* to_string(Norm n) {
  return n == Norm::RMS ? "rms" : "layer";
}
const char* to_string(PeLayout l) {
  return l == PeLayout::Split ? "split" : "interleaved";
}
const char* to_string(Head h) {
  return h == Head::MaskedLM ? "mlm" : "none";
}

std::string config_to_json(const Config& c) {
  json j = json::object();
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["n_heads"] = c.n_heads;
  j["d_ff"] = c.d_ff;
  j["n_layers"] = c.n_layers;
  j["activation"] = to_string(c.activation);
  j["norm_first"] = c.norm_first;
  j["final_norm"] = c.final_norm;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["positional_encoding"] = to_string(c.positional_encoding);
  j["pe_layout"] = to_string(c.pe_layout);
  j["pe_base"] = c.pe_base;
  if (c.positional_encoding == PositionalEncoding::Learned) j["max_positions"] = c.max_positions;
  if (c.bucket_bias()) {
    j["relative_attention_num_buckets"] = c.relative_buckets;
    j["relative_attention_max_distance"] = c.relative_max_distance;
  }
  if (!c.alibi_slopes.empty()) j["alibi_slopes"] = c.alibi_slopes;
  j["scale_embedding"] = c.scale_embedding;
  j["tokenizer"] = c.tokenizer;
  j["add_bos"] = c.add_bos;
  j["add_eos"] = c.add_eos;
  if (c.head == Head::MaskedLM) j["head"] = "mlm";
  if (c.family != Family::Ordo) {  // what a Hugging Face directory adds (read from it, never written to one)
    j["family"] = to_string(c.family);
    j["embedding_norm"] = c.embedding_norm;
    j["token_types"] = c.token_types;
    j["position_offset"] = c.position_offset;
    j["max_positions"] = c.max_positions;
    if (!c.pooling.empty()) j["pooling"] = c.pooling;
    for (const DenseModule& d : c.dense)
      j["dense"].push_back({{"path", d.path},
                            {"in_features", d.in_features},
                            {"out_features", d.out_features},
                            {"bias", d.bias},
                            {"activation", to_string(d.activation)}});
    j["normalize"] = c.normalize;
    if (c.max_length > 0) j["max_length"] = c.max_length;
    j["name"] = c.name;
  }
  if (c.family == Family::T5) {
    j["norm"] = to_string(c.norm);
    j["gated_ffn"] = c.gated_ffn;
    j["scale_attention"] = c.scale_attention;
    j["head_size"] = c.head_dim();
  }
  return j.dump(2) + "\n";
}

std::vector<bool> head_mask(const Config& c, const std::vector<HeadIndex>& masked) {
  std::vector<bool> flags(size_t(c.n_layers) * c.n_heads, false);
  for (const HeadIndex& m : masked) {
    if (m.layer < 0 || m.layer >= c.n_layers || m.head < 0 || m.head >= c.n_heads)
      throw std::invalid_argument("head " + std::to_string(m.layer) + "," + std::to_string(m.head) +
                                  ": this model has layers 0 .. " + std::to_string(c.n_layers - 1) +
                                  " and heads 0 .. " + std::to_string(c.n_heads - 1));
    flags[size_t(m.layer) * c.n_heads + m.head] = true;
  }
  return flags;
}

}  // namespace ordo
