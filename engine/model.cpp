#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>

#include <ordo/engine/model.h>
#include <ordo/errors.h>

namespace ordo {

namespace {
std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// A layer's tensors in file order: PyTorch's name, the field of LayerWeights it fills, its shape.
using Shape = std::vector<uint64_t>;
struct LayerTensor {
  const char* name;
  const float* LayerWeights::*field;
  Shape (*shape)(uint64_t d, uint64_t F);
};
const LayerTensor kLayerTensors[] = {
    {"self_attn.in_proj_weight", &LayerWeights::in_proj_weight,
     [](uint64_t d, uint64_t) {
       return Shape{3 * d, d};
     }},
    {"self_attn.in_proj_bias", &LayerWeights::in_proj_bias, [](uint64_t d, uint64_t) { return Shape{3 * d}; }},
    {"self_attn.out_proj.weight", &LayerWeights::out_proj_weight,
     [](uint64_t d, uint64_t) {
       return Shape{d, d};
     }},
    {"self_attn.out_proj.bias", &LayerWeights::out_proj_bias, [](uint64_t d, uint64_t) { return Shape{d}; }},
    {"linear1.weight", &LayerWeights::linear1_weight,
     [](uint64_t d, uint64_t F) {
       return Shape{F, d};
     }},
    {"linear1.bias", &LayerWeights::linear1_bias, [](uint64_t, uint64_t F) { return Shape{F}; }},
    {"linear2.weight", &LayerWeights::linear2_weight,
     [](uint64_t d, uint64_t F) {
       return Shape{d, F};
     }},
    {"linear2.bias", &LayerWeights::linear2_bias, [](uint64_t d, uint64_t) { return Shape{d}; }},
    {"norm1.weight", &LayerWeights::norm1_weight, [](uint64_t d, uint64_t) { return Shape{d}; }},
    {"norm1.bias", &LayerWeights::norm1_bias, [](uint64_t d, uint64_t) { return Shape{d}; }},
    {"norm2.weight", &LayerWeights::norm2_weight, [](uint64_t d, uint64_t) { return Shape{d}; }},
    {"norm2.bias", &LayerWeights::norm2_bias, [](uint64_t d, uint64_t) { return Shape{d}; }},
};

// A Hugging Face encoder layer's modules in the order Model takes them, each as a weight then a bias,
// under each family's names: BertLayer's (RoBERTa's and XLM-R's too), MPNetLayer's, and DistilBERT's
// TransformerBlock's.
struct HfLayerModule {
  const char* bert;
  const char* mpnet;
  const char* distilbert;
  bool matrix;    // a weight (out, in), else a LayerNorm's γ (out)
  bool wide_out;  // out = F (BERT's intermediate.dense), else d
  bool wide_in;   // in = F (output.dense), else d
};
const HfLayerModule kHfLayerModules[] = {
    {"attention.self.query", "attention.attn.q", "attention.q_lin", true, false, false},
    {"attention.self.key", "attention.attn.k", "attention.k_lin", true, false, false},
    {"attention.self.value", "attention.attn.v", "attention.v_lin", true, false, false},
    {"attention.output.dense", "attention.attn.o", "attention.out_lin", true, false, false},
    {"attention.output.LayerNorm", "attention.LayerNorm", "sa_layer_norm", false, false, false},
    {"intermediate.dense", "intermediate.dense", "ffn.lin1", true, true, false},
    {"output.dense", "output.dense", "ffn.lin2", true, false, true},
    {"output.LayerNorm", "output.LayerNorm", "output_layer_norm", false, false, false},
};

// A masked-LM head's tensors after its prefix, in the order Model takes them: the transform's dense
// weight and bias, its LayerNorm's weight and bias, the decoder (when untied), the output bias.
// BertForMaskedLM's "cls.predictions.", XLMRobertaForMaskedLM's "lm_head.", DistilBertForMaskedLM's
// "vocab_" (vocab_transform, vocab_layer_norm, vocab_projector).
struct HeadNames {
  const char* prefix;
  const char* names[6];
};
const HeadNames kHeadNames[] = {
    {"cls.predictions.",
     {"transform.dense.weight", "transform.dense.bias", "transform.LayerNorm.weight", "transform.LayerNorm.bias",
      "decoder.weight", "bias"}},
    {"lm_head.", {"dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "decoder.weight", "bias"}},
    {"vocab_",
     {"transform.weight", "transform.bias", "layer_norm.weight", "layer_norm.bias", "projector.weight",
      "projector.bias"}},
};
const HeadNames& head_names(const std::string& prefix) {
  for (const HeadNames& h : kHeadNames)
    if (prefix == h.prefix) return h;
  return kHeadNames[0];
}

// A T5 encoder's tensors (T5EncoderModel's names; T5ForConditionalGeneration's encoder has the same),
// in the order Model takes them. A = h·d_kv.
std::vector<TensorSpec> t5_tensors(const Config& c, size_t limit) {
  const uint64_t V = c.vocab_size, d = c.d_model, F = c.d_ff, A = uint64_t(c.attention_width());
  std::vector<TensorSpec> specs = {{c.weights_prefix + "weight", {V, d}},
                                   {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                                    {uint64_t(c.relative_buckets), uint64_t(c.n_heads)}}};
  for (int i = 0; i < c.n_layers && specs.size() < limit; ++i) {
    const std::string l = "encoder.block." + std::to_string(i) + ".layer.";
    for (const char* m : {"q", "k", "v"}) specs.push_back({l + "0.SelfAttention." + m + ".weight", {A, d}});
    specs.push_back({l + "0.SelfAttention.o.weight", {d, A}});
    specs.push_back({l + "0.layer_norm.weight", {d}});
    if (c.gated_ffn) {
      specs.push_back({l + "1.DenseReluDense.wi_0.weight", {F, d}});
      specs.push_back({l + "1.DenseReluDense.wi_1.weight", {F, d}});
    } else {
      specs.push_back({l + "1.DenseReluDense.wi.weight", {F, d}});
    }
    specs.push_back({l + "1.DenseReluDense.wo.weight", {d, F}});
    specs.push_back({l + "1.layer_norm.weight", {d}});
  }
  specs.push_back({"encoder.final_layer_norm.weight", {d}});
  if (specs.size() > limit) specs.resize(limit);
  return specs;
}

// A bucket table's first `buckets` rows of h biases, (buckets, h) as transformers keeps it, turned once
// to ordo's (h, buckets): W[i, b] = table[b, i]
std::vector<float> by_head(const float* table, size_t buckets, size_t h) {
  std::vector<float> turned(h * buckets);
  for (size_t b = 0; b < buckets; ++b)
    for (size_t i = 0; i < h; ++i) turned[i * buckets + b] = table[b * h + i];
  return turned;
}

std::vector<TensorSpec> hf_tensors(const Config& c, size_t limit) {
  if (c.family == Family::T5) return t5_tensors(c, limit);
  const uint64_t V = c.vocab_size, d = c.d_model, F = c.d_ff;
  const std::string& p = c.weights_prefix;
  std::vector<TensorSpec> specs = {{p + "embeddings.word_embeddings.weight", {V, d}},
                                   {p + "embeddings.position_embeddings.weight", {uint64_t(c.max_positions), d}}};
  if (c.token_types > 0) specs.push_back({p + "embeddings.token_type_embeddings.weight", {uint64_t(c.token_types), d}});
  specs.push_back({p + "embeddings.LayerNorm.weight", {d}});
  specs.push_back({p + "embeddings.LayerNorm.bias", {d}});
  const bool mpnet = c.family == Family::MPNet, distil = c.family == Family::DistilBert;
  if (mpnet)  // the bucket table every layer reads, (rows, h)
    specs.push_back(
        {p + "encoder.relative_attention_bias.weight", {uint64_t(c.relative_table_rows), uint64_t(c.n_heads)}});
  for (int i = 0; i < c.n_layers && specs.size() < limit; ++i) {
    const std::string l = p + (distil ? "transformer.layer." : "encoder.layer.") + std::to_string(i) + ".";
    for (const HfLayerModule& m : kHfLayerModules) {
      const uint64_t out = m.wide_out ? F : d, in = m.wide_in ? F : d;
      const std::string name = l + (mpnet ? m.mpnet : distil ? m.distilbert : m.bert);
      specs.push_back({name + ".weight", m.matrix ? Shape{out, in} : Shape{out}});
      specs.push_back({name + ".bias", {out}});
    }
  }
  if (c.head == Head::MaskedLM) {  // cls.predictions.*, lm_head.* or vocab_* (kHeadNames)
    const std::string& h = c.head_prefix;
    const char* const(&n)[6] = head_names(h).names;
    specs.push_back({h + n[0], {d, d}});
    specs.push_back({h + n[1], {d}});
    specs.push_back({h + n[2], {d}});
    specs.push_back({h + n[3], {d}});
    if (c.head_decoder) specs.push_back({h + n[4], {V, d}});
    specs.push_back({h + n[5], {V}});
  }
  if (specs.size() > limit) specs.resize(limit);
  return specs;
}
}  // namespace

std::vector<TensorSpec> expected_tensors(const Config& c, size_t limit) {
  if (c.family != Family::Ordo) return hf_tensors(c, limit);
  const uint64_t V = c.vocab_size, d = c.d_model, F = c.d_ff;
  std::vector<TensorSpec> specs = {{"embedding.weight", {V, d}}};
  if (c.positional_encoding == PositionalEncoding::Learned)
    specs.push_back({"position_embedding.weight", {uint64_t(c.max_positions), d}});
  if (c.positional_encoding == PositionalEncoding::T5Buckets)
    specs.push_back({"position_bias", {uint64_t(c.n_heads), uint64_t(c.relative_buckets)}});
  for (int i = 0; i < c.n_layers && specs.size() < limit; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    for (const LayerTensor& t : kLayerTensors) specs.push_back({p + t.name, t.shape(d, F)});
  }
  if (c.final_norm) {
    specs.push_back({"norm.weight", {d}});
    specs.push_back({"norm.bias", {d}});
  }
  if (c.head == Head::MaskedLM) specs.push_back({"head.bias", {V}});
  if (specs.size() > limit) specs.resize(limit);
  return specs;
}

uint64_t expected_parameters(const Config& c, const std::string& where) {
  const uint64_t V = c.vocab_size, d = c.d_model, F = c.d_ff;
  const auto mul = [&](uint64_t a, uint64_t b) { return checked_mul(a, b, where, "the parameter count"); };
  const auto add = [&](uint64_t a, uint64_t b) { return checked_add(a, b, where, "the parameter count"); };
  if (c.family == Family::T5) {  // per layer: q, k, v, o 4·A·d, wi (and wi_1) F·d each, wo d·F, two norms 2d
    const uint64_t A = uint64_t(c.attention_width());
    const uint64_t layer = add(add(mul(4 * A, d), mul(c.gated_ffn ? 3 * F : 2 * F, d)), 2 * d);
    const uint64_t table = mul(uint64_t(c.relative_buckets), uint64_t(c.n_heads));
    return add(add(mul(V, d), mul(layer, uint64_t(c.n_layers))), add(table, d));
  }
  // per layer: in_proj 3d·d + 3d, out_proj d·d + d, linear1 F·d + F, linear2 d·F + d, two norms 4d
  const uint64_t layer = add(add(mul(4 * d, d), mul(2 * F, d)), add(F, 9 * d));
  uint64_t n = add(mul(V, d), mul(layer, uint64_t(c.n_layers)));
  if (c.positional_encoding == PositionalEncoding::Learned) n = add(n, mul(uint64_t(c.max_positions), d));
  if (c.positional_encoding == PositionalEncoding::T5Buckets)
    n = add(n, mul(uint64_t(c.n_heads), uint64_t(c.relative_buckets)));
  n = add(n, mul(uint64_t(c.token_types), d));  // Hugging Face encoders: the token-type table
  if (c.family == Family::MPNet) n = add(n, mul(uint64_t(c.relative_table_rows), uint64_t(c.n_heads)));
  if (c.embedding_norm) n = add(n, 2 * d);
  if (c.final_norm) n = add(n, 2 * d);
  if (c.head == Head::MaskedLM) n = add(n, V);
  if (c.head_transform) n = add(n, add(mul(d, d), 3 * d));  // a Hugging Face head: dense and LayerNorm
  if (c.head_decoder) n = add(n, mul(V, d));                // and its own decoder, untied
  return n;
}

void require_safetensors(const std::string& dir) {
  struct stat st {};
  if (::stat((dir + "/model.safetensors").c_str(), &st) != 0 && ::stat((dir + "/pytorch_model.bin").c_str(), &st) == 0)
    throw InputError(dir,
                     "has pytorch_model.bin but no model.safetensors; ordo reads safetensors only. Convert once with: "
                     "python3 -c \"import torch, safetensors.torch as s; s.save_file({k: v.contiguous().clone() "
                     "for k, v in torch.load('" +
                         dir + "/pytorch_model.bin', map_location='cpu').items()}, '" + dir + "/model.safetensors')\"");
}

Model Model::load(const std::string& dir) {
  Config c = load_config(dir + "/config.json");
  if (c.family != Family::Ordo) require_safetensors(dir);
  Model m(std::move(c), dir + "/model.safetensors");
  m.dir = dir;
  return m;
}

Model::Model(Config config, const std::string& weights_path) : config_(std::move(config)), file_(weights_path) {
  const std::string& where = file_.path();
  if (config_.family == Family::T5) {  // T5EncoderModel's table is shared.weight; encoder.embed_tokens is tied to it
    for (const char* p : {"shared.", "encoder.embed_tokens."})
      if (config_.weights_prefix.empty() && file_.find(std::string(p) + "weight")) config_.weights_prefix = p;
    if (config_.weights_prefix.empty())
      throw InputError(where,
                       "has no tensor shared.weight or encoder.embed_tokens.weight: not the weights of a T5 encoder "
                       "(config.json's model_type)");
  } else if (config_.family != Family::Ordo) {  // BertModel saves its tensors bare; BertForMaskedLM under "bert."
    bool found = false;
    for (const char* p : {"", "bert.", "roberta.", "mpnet.", "distilbert."})
      if (!found && file_.find(std::string(p) + "embeddings.word_embeddings.weight")) {
        config_.weights_prefix = p;
        found = true;
      }
    if (!found)
      throw InputError(where, std::string("has no tensor embeddings.word_embeddings.weight: not the weights of a ") +
                                  (config_.family == Family::Bert         ? "BertModel"
                                   : config_.family == Family::MPNet      ? "MPNetModel"
                                   : config_.family == Family::DistilBert ? "DistilBertModel"
                                                                          : "RobertaModel") +
                                  " (config.json's model_type)");
    // A masked-LM head where the file has one: BertForMaskedLM's cls.predictions (its transform's
    // activation is hidden_act), XLMRobertaForMaskedLM's lm_head (always the erf GELU),
    // DistilBertForMaskedLM's vocab_transform, vocab_layer_norm, vocab_projector (the config's activation).
    for (const HeadNames& h : kHeadNames)
      if (config_.head == Head::None && file_.find(std::string(h.prefix) + h.names[5])) {
        config_.head = Head::MaskedLM;
        config_.head_transform = true;
        config_.head_prefix = h.prefix;
        config_.head_activation = config_.head_prefix == "lm_head." ? Activation::GELU : config_.activation;
        config_.head_decoder = file_.find(std::string(h.prefix) + h.names[4]) != nullptr;
      }
  }
  // Other extra tensors are ignored (a checkpoint may hold more than the encoder), but a head's
  // bias without "head" in config.json means the two files disagree about what the model is.
  if (config_.head == Head::None && file_.find("head.bias"))
    throw InputError(where,
                     "holds tensor head.bias (a masked-language-model head) but config.json has no \"head\": \"mlm\"");
  // Tensor names in a file are distinct, so if the config asks for more tensors than the file
  // holds, one is missing among the first tensors().size() + 1 it asks for.
  std::vector<std::string> non_finite;
  std::string first_bad;
  std::vector<const float*> in_order;  // the tensors' values, in the order expected_tensors lists them
  for (const TensorSpec& spec : expected_tensors(config_, file_.tensors().size() + 1)) {
    const TensorInfo* t = file_.find(spec.name);
    if (!t) throw InputError(where, "missing tensor " + spec.name + " " + shape_string(spec.shape));
    if (t->shape != spec.shape)
      throw InputError(where, "tensor " + spec.name + " has shape " + shape_string(t->shape) + ", config wants " +
                                  shape_string(spec.shape));
    const float* values = nullptr;
    const size_t n = t->elements;
    if (t->dtype == "F32" && reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0) {
      values = reinterpret_cast<const float*>(t->data);  // in place, straight from the file's image
    } else {  // copied (an F32 the header placed off alignment) or widened, or the one-line refusal
      widened_.push_back(widen_to_f32(*t, where));
      values = widened_.back().data();
    }
    // A NaN or an infinity in a weight would reach every output; such a file is refused below.
    for (size_t i = 0; i < n; ++i)
      if (!std::isfinite(values[i])) {
        if (non_finite.empty())
          first_bad = "tensor " + spec.name + " holds " + (std::isnan(values[i]) ? "NaN" : "infinity") +
                      " at element " + std::to_string(i);
        non_finite.push_back(spec.name);
        break;
      }
    parameters_ += n;
    in_order.push_back(values);
  }

  if (!non_finite.empty())
    throw InputError(where, first_bad + (non_finite.size() > 1 ? " (and " + std::to_string(non_finite.size() - 1) +
                                                                     " more tensors hold NaN or infinity)"
                                                               : ""));

  // Hand the pointers out under their PyTorch names, in the order expected_tensors lists them.
  size_t next = 0;
  auto take = [&]() { return in_order[next++]; };
  if (config_.family == Family::T5) {
    const size_t d = config_.d_model, A = config_.attention_width(), h = config_.n_heads;
    const size_t buckets = config_.relative_buckets;
    weights_.embedding = take();
    widened_.push_back(by_head(take(), buckets, h));  // the bucket table, (buckets, h) in the file
    weights_.position_bias = widened_.back().data();
    weights_.layers.resize(config_.n_layers);
    for (LayerWeights& l : weights_.layers) {
      std::vector<float> w(3 * A * d);  // in_proj = [Wq; Wk; Wv] (3A, d), no biases
      for (int k = 0; k < 3; ++k) std::copy_n(take(), A * d, w.data() + k * A * d);
      widened_.push_back(std::move(w));
      l.in_proj_weight = widened_.back().data();
      l.out_proj_weight = take();
      l.norm1_weight = take();
      l.linear1_weight = take();
      if (config_.gated_ffn) l.linear1_v_weight = take();
      l.linear2_weight = take();
      l.norm2_weight = take();
      l.position_bias = weights_.position_bias;
    }
    weights_.norm_weight = take();
    weights_.head_decoder = weights_.embedding;
    return;
  }
  if (config_.family != Family::Ordo) {
    const size_t d = config_.d_model;
    weights_.embedding = take();
    weights_.position_embedding = take();
    if (config_.token_types > 0) weights_.token_type_embedding = take();
    weights_.embedding_norm_weight = take();
    weights_.embedding_norm_bias = take();
    if (config_.family == Family::MPNet) {
      // the bucket table, (rows, h) in the file, of which MPNet reads the first relative_buckets
      widened_.push_back(by_head(take(), size_t(config_.relative_buckets), size_t(config_.n_heads)));
      weights_.position_bias = widened_.back().data();
    }
    weights_.layers.resize(config_.n_layers);
    for (LayerWeights& l : weights_.layers) {
      // in_proj = [Wq; Wk; Wv] (3d, d) and [bq; bk; bv] (3d): the one copy of a Hugging Face model
      std::vector<float> w(3 * d * d), b(3 * d);
      for (int k = 0; k < 3; ++k) {
        std::copy_n(take(), d * d, w.data() + k * d * d);
        std::copy_n(take(), d, b.data() + k * d);
      }
      widened_.push_back(std::move(w));
      l.in_proj_weight = widened_.back().data();
      widened_.push_back(std::move(b));
      l.in_proj_bias = widened_.back().data();
      l.out_proj_weight = take(), l.out_proj_bias = take();
      l.norm1_weight = take(), l.norm1_bias = take();
      l.linear1_weight = take(), l.linear1_bias = take();
      l.linear2_weight = take(), l.linear2_bias = take();
      l.norm2_weight = take(), l.norm2_bias = take();
      l.position_bias = weights_.position_bias;  // MPNet's one table, or null
    }
    weights_.head_decoder = weights_.embedding;
    if (config_.head == Head::MaskedLM) {
      weights_.head_dense_weight = take(), weights_.head_dense_bias = take();
      weights_.head_norm_weight = take(), weights_.head_norm_bias = take();
      if (config_.head_decoder) weights_.head_decoder = take();
      weights_.head_bias = take();
    }
    return;
  }
  weights_.embedding = take();
  if (config_.positional_encoding == PositionalEncoding::Learned) weights_.position_embedding = take();
  if (config_.positional_encoding == PositionalEncoding::T5Buckets) weights_.position_bias = take();
  weights_.layers.resize(config_.n_layers);
  for (LayerWeights& l : weights_.layers) {
    for (const LayerTensor& t : kLayerTensors) l.*t.field = take();
    l.position_bias = weights_.position_bias;
  }
  if (config_.final_norm) {
    weights_.norm_weight = take();
    weights_.norm_bias = take();
  }
  if (config_.head == Head::MaskedLM) weights_.head_bias = take();
  weights_.head_decoder = weights_.embedding;
}

}  // namespace ordo
