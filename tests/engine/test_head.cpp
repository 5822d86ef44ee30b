// The masked-language-model head: config key, the head.bias tensor, and the fast logits
// (cblas_sgemm) against the plain double ones of engine/reference.h.
#include <gtest/gtest.h>

#include <cmath>

#include <ordo/engine/encoder.h>
#include <ordo/engine/head.h>
#include <ordo/errors.h>

#include "engine/init.h"
#include "engine/reference.h"
#include "test_util.h"

namespace ordo {
namespace {

const char* kBase = R"({"vocab_size": 40, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1,
                        "positional_encoding": "sinusoidal")";

Config parse(const std::string& extra) {
  return parse_config(std::string(kBase) + extra + "}", "config.json");
}

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HeadConfig, MlmOrAbsent) {
  EXPECT_EQ(parse("").head, Head::None);
  EXPECT_EQ(parse(R"(, "head": "mlm")").head, Head::MaskedLM);
  for (const char* bad : {R"(, "head": "MLM")", R"(, "head": "bert")", R"(, "head": "")", R"(, "head": 1)",
                          R"(, "head": null)", R"(, "head": true)", R"(, "head": ["mlm"])"}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("config.json: key \"head\" must be \"mlm\""), std::string::npos) << bad << " gave: " << e;
  }
}

TEST(HeadConfig, WrittenBackOnlyWhenPresent) {
  Config c = parse(R"(, "head": "mlm")");
  EXPECT_NE(config_to_json(c).find("\"head\": \"mlm\""), std::string::npos);
  EXPECT_EQ(parse_config(config_to_json(c), "x").head, Head::MaskedLM);
  c.head = Head::None;
  EXPECT_EQ(config_to_json(c).find("\"head\""), std::string::npos);
}

Config head_config() {
  Config c = parse(R"(, "head": "mlm", "final_norm": true)");
  return c;
}

// Every tensor random (head.bias too), so that a wrong wire shows.
std::vector<TensorBytes> random_tensors(const Config& c, uint64_t seed) {
  std::vector<TensorBytes> tensors;
  for (const TensorSpec& spec : expected_tensors(c)) {
    uint64_t n = 1;
    for (uint64_t k : spec.shape) n *= k;
    auto v = test::random_floats(n, ++seed * 7919, 0.5f);
    if (spec.name.find("norm") != std::string::npos && spec.name.find(".weight") != std::string::npos)
      for (float& x : v) x += 1.0f;
    tensors.push_back(f32_tensor(spec.name, spec.shape, v));
  }
  return tensors;
}

TEST(HeadModel, HeadBiasIsTheLastTensorAndCounted) {
  const Config c = head_config();
  const auto specs = expected_tensors(c);
  ASSERT_FALSE(specs.empty());
  EXPECT_EQ(specs.back().name, "head.bias");
  EXPECT_EQ(specs.back().shape, std::vector<uint64_t>{40});
  Config plain = c;
  plain.head = Head::None;
  EXPECT_EQ(expected_parameters(c, "x"), expected_parameters(plain, "x") + 40);

  test::TempDir dir;
  write_safetensors(dir.path + "/model.safetensors", random_tensors(c, 1));
  const Model m(c, dir.path + "/model.safetensors");
  ASSERT_NE(m.weights().head_bias, nullptr);
  EXPECT_EQ(m.parameter_count(), expected_parameters(c, "x"));
  // The same file read by a config without the head: head.bias is there but not asked for.
  const std::string error = test::input_error([&] { Model other(plain, dir.path + "/model.safetensors"); });
  EXPECT_NE(error.find("model.safetensors: holds tensor head.bias"), std::string::npos) << error;
}

TEST(HeadModel, MissingHeadBiasIsALoadError) {
  const Config c = head_config();
  Config plain = c;
  plain.head = Head::None;
  test::TempDir dir;
  write_safetensors(dir.path + "/model.safetensors", random_tensors(plain, 1));
  const std::string error = test::input_error([&] { Model m(c, dir.path + "/model.safetensors"); });
  EXPECT_NE(error.find("missing tensor head.bias [40]"), std::string::npos) << error;
}

// logits = h·Eᵀ + b, the fast path (cblas_sgemm on float) against reference::mlm_logits (double),
// on hidden states from the fast encoder and from the plain one.
TEST(HeadLogits, MatchThePlainHeadInDouble) {
  const Config c = head_config();
  test::TempDir dir;
  write_safetensors(dir.path + "/model.safetensors", random_tensors(c, 3));
  const Model m(c, dir.path + "/model.safetensors");
  const int V = c.vocab_size, d = c.d_model;
  const std::vector<int32_t> ids = {5, 17, 3, 39, 0, 17, 22};
  const int L = int(ids.size());

  Encoder enc(m);
  const Hidden h = enc.forward({ids});
  std::vector<float> fast(size_t(L) * V);
  mlm_logits(fast.data(), h.row(0, 0), L, m);

  // The head alone: the same float rows, widened.
  std::vector<double> same(size_t(L) * V);
  reference::mlm_logits(same.data(), test::widen(h.row(0, 0), size_t(L) * d).data(), m.weights().embedding,
                        m.weights().head_bias, L, V, d);
  // The whole model in double.
  const std::vector<double> hd = reference::forward(m, ids);
  std::vector<double> plain(size_t(L) * V);
  reference::mlm_logits(plain.data(), hd.data(), m.weights().embedding, m.weights().head_bias, L, V, d);

  double worst_head = 0, worst_all = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    worst_head = std::max(worst_head, std::fabs(fast[i] - same[i]) / std::max(1.0, std::fabs(same[i])));
    worst_all = std::max(worst_all, std::fabs(fast[i] - plain[i]) / std::max(1.0, std::fabs(plain[i])));
  }
  EXPECT_LT(worst_head, 1e-6);
  EXPECT_LT(worst_all, 2e-5);

  // By hand, one entry: the bias is added once and E is not scaled by √d.
  double z = m.weights().head_bias[7];
  for (int k = 0; k < d; ++k) z += hd[size_t(2) * d + k] * m.weights().embedding[size_t(7) * d + k];
  EXPECT_NEAR(plain[size_t(2) * V + 7], z, 1e-12);
}

TEST(HeadLogits, OnlyTheRowsAskedForAndZeroRows) {
  const Config c = head_config();
  test::TempDir dir;
  write_safetensors(dir.path + "/model.safetensors", random_tensors(c, 5));
  const Model m(c, dir.path + "/model.safetensors");
  Encoder enc(m);
  const Hidden h = enc.forward({{1, 2, 3, 4}});
  std::vector<float> all(size_t(4) * c.vocab_size), one(c.vocab_size);
  mlm_logits(all.data(), h.row(0, 0), 4, m);
  mlm_logits(one.data(), h.row(0, 2), 1, m);
  EXPECT_LT(test::max_abs_diff(one.data(), all.data() + 2 * c.vocab_size, c.vocab_size), 1e-5);
  mlm_logits(nullptr, nullptr, 0, m);  // nothing to do, nothing touched
}

// A Hugging Face encoder's config (BertModel's sizes; RoBERTa's position offset), the encoder under
// `prefix` as a ...ForMaskedLM checkpoint saves it.
Config hf_config(Family family, Activation act, const std::string& head_prefix, bool decoder) {
  Config c = test::sized_config(43, 12, 3, 20, 2);
  c.family = family;
  c.activation = act;
  c.layer_norm_eps = 1e-12;
  c.positional_encoding = PositionalEncoding::Learned;
  c.max_positions = 24;
  c.scale_embedding = false;
  c.embedding_norm = true;
  c.token_types = 2;
  c.position_offset = family == Family::Roberta ? 2 : 0;
  c.weights_prefix = family == Family::Roberta ? "roberta." : "bert.";
  c.head = Head::MaskedLM;
  c.head_transform = true;
  c.head_prefix = head_prefix;
  c.head_decoder = decoder;
  return c;
}

// The head of a BertForMaskedLM / XLMRobertaForMaskedLM checkpoint, found by its tensors:
//   u = LayerNorm(act(h·W_hᵀ + b_h)),  logits = u·Dᵀ + b
// fast (engine/head.cpp) against the plain twin in double, and one entry by hand from the plain
// encoder's rows; the activation is hidden_act for BERT and the erf GELU for RoBERTa's lm_head.
TEST(HeadLogits, HuggingFaceHeadsMatchThePlainHead) {
  struct Case {
    Family family;
    Activation act;
    const char* prefix;
    bool decoder;
    Activation want;
  };
  for (const Case& k : {Case{Family::Bert, Activation::GELUTanh, "cls.predictions.", false, Activation::GELUTanh},
                        Case{Family::Bert, Activation::ReLU, "cls.predictions.", true, Activation::ReLU},
                        Case{Family::Roberta, Activation::ReLU, "lm_head.", false, Activation::GELU},
                        Case{Family::Roberta, Activation::GELUTanh, "lm_head.", true, Activation::GELU}}) {
    SCOPED_TRACE(k.prefix + std::string(k.decoder ? " with its own decoder" : " tied"));
    const Config full = hf_config(k.family, k.act, k.prefix, k.decoder);
    test::TempDir dir;
    test::write_random_weights(full, dir.path, 11);
    Config bare = full;  // what parse_hf_config gives: the head is Model's to find
    bare.head = Head::None, bare.head_transform = false, bare.head_prefix.clear(), bare.head_decoder = false;
    bare.weights_prefix.clear();
    const Model m(bare, dir.path + "/model.safetensors");
    const Config& c = m.config();
    ASSERT_EQ(c.head, Head::MaskedLM);
    EXPECT_TRUE(c.head_transform);
    EXPECT_EQ(c.head_prefix, k.prefix);
    EXPECT_EQ(c.head_decoder, k.decoder);
    EXPECT_EQ(c.head_activation, k.want);
    EXPECT_EQ(m.parameter_count(), expected_parameters(c, "x"));
    const Weights& w = m.weights();
    EXPECT_EQ(w.head_decoder == w.embedding, !k.decoder);

    const std::vector<int32_t> ids = {2, 17, 5, 42, 0, 17, 3};
    const int L = int(ids.size()), V = c.vocab_size, d = c.d_model;
    Encoder enc(m);
    const Hidden h = enc.forward({ids});
    std::vector<float> fast(size_t(L) * V);
    mlm_logits(fast.data(), h.row(0, 0), L, m);
    std::vector<double> same(size_t(L) * V);
    reference::mlm_logits(same.data(), test::widen(h.row(0, 0), size_t(L) * d).data(), L, m);
    double worst = 0;
    for (size_t i = 0; i < fast.size(); ++i)
      worst = std::max(worst, std::fabs(fast[i] - same[i]) / std::max(1.0, std::fabs(same[i])));
    EXPECT_LT(worst, 1e-5);

    // By hand, one entry of the plain head from the plain encoder's row 3.
    const std::vector<double> hd = reference::forward(m, ids);
    std::vector<double> plain(size_t(L) * V);
    reference::mlm_logits(plain.data(), hd.data(), L, m);
    std::vector<double> u(d);
    for (int j = 0; j < d; ++j) {
      double a = w.head_dense_bias[j];
      for (int i = 0; i < d; ++i) a += hd[size_t(3) * d + i] * w.head_dense_weight[size_t(j) * d + i];
      u[j] = k.want == Activation::ReLU   ? std::max(a, 0.0)
             : k.want == Activation::GELU ? 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)))
                                          : 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
    }
    double mean = 0, var = 0;
    for (double v : u) mean += v / d;
    for (double v : u) var += (v - mean) * (v - mean) / d;
    double z = w.head_bias[7];
    for (int j = 0; j < d; ++j)
      z += ((u[j] - mean) / std::sqrt(var + 1e-12) * w.head_norm_weight[j] + w.head_norm_bias[j]) *
           w.head_decoder[size_t(7) * d + j];
    EXPECT_NEAR(plain[size_t(3) * V + 7], z, 1e-9);
  }
}

TEST(HeadLogits, LogSumExpIsStableAndExact) {
  const float z[] = {1000.0f, 1000.0f, -1000.0f};
  EXPECT_NEAR(log_sum_exp(z, 3), 1000.0 + std::log(2.0), 1e-9);
  const float w[] = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(log_sum_exp(w, 2), std::log(4.0), 1e-7);
}

}  // namespace
}  // namespace ordo
