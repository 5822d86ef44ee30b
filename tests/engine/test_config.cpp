// config.json: defaults, and errors that name the key.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include <ordo/config.h>
#include <ordo/errors.h>

#include "test_util.h"

namespace ordo {
namespace {

const char* kMinimal = R"({"vocab_size": 100, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1,
                           "positional_encoding": "sinusoidal"})";

TEST(Config, DefaultsAreTheDocumentedOnes) {
  const Config c = parse_config(kMinimal, "config.json");
  EXPECT_EQ(c.activation, Activation::ReLU);
  EXPECT_FALSE(c.norm_first);
  EXPECT_FALSE(c.final_norm);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-5);
  EXPECT_EQ(c.pe_layout, PeLayout::Interleaved);
  EXPECT_DOUBLE_EQ(c.pe_base, 10000.0);
  EXPECT_TRUE(c.scale_embedding);
  EXPECT_EQ(c.tokenizer, "tokenizer.model");
  EXPECT_FALSE(c.add_bos);
  EXPECT_FALSE(c.add_eos);
  EXPECT_EQ(c.head_dim(), 4);
}

TEST(Config, RoundTripsThroughJson) {
  Config c = parse_config(kMinimal, "config.json");
  c.activation = Activation::GELU;
  c.norm_first = c.final_norm = true;
  c.positional_encoding = PositionalEncoding::Learned;
  c.max_positions = 77;
  c.pe_layout = PeLayout::Split;
  const Config back = parse_config(config_to_json(c), "again");
  EXPECT_EQ(back.activation, Activation::GELU);
  EXPECT_TRUE(back.norm_first && back.final_norm);
  EXPECT_EQ(back.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(back.max_positions, 77);
  EXPECT_EQ(back.pe_layout, PeLayout::Split);
}

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "m/config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string with(const std::string& key_value) {
  std::string s = kMinimal;
  return s.substr(0, s.size() - 1) + ", " + key_value + "}";
}

TEST(Config, ErrorsNameTheKey) {
  EXPECT_EQ(error_of("{nope").rfind("m/config.json: not valid JSON: parse error at line 1, column 3", 0), 0u);
  EXPECT_EQ(error_of(R"({"d_model": 8})"), "m/config.json: missing required key \"vocab_size\"");
  EXPECT_NE(error_of(with(R"("activation": "swish")")).find("\"activation\" must be \"relu\" | \"gelu\""),
            std::string::npos);
  EXPECT_NE(error_of(with(R"("norm_first": "yes")")).find("\"norm_first\" must be true or false"), std::string::npos);
  EXPECT_NE(error_of(with(R"("layer_norm_eps": 0)")).find("\"layer_norm_eps\" must be a positive number"),
            std::string::npos);
  EXPECT_NE(error_of(with(R"("pe_layout": "zigzag")")).find("\"pe_layout\""), std::string::npos);
  // Whole configs: (the sizes and encoding, what the error must say).
  const std::pair<const char*, const char*> cases[] = {
      {R"("vocab_size": 100, "d_model": 10, "n_heads": 3, "positional_encoding": "none")", "divisible"},
      {R"("vocab_size": 100, "d_model": 8, "n_heads": 2, "positional_encoding": "learned")", "\"max_positions\""},
      {R"("vocab_size": -5, "d_model": 8, "n_heads": 2, "positional_encoding": "none")",
       "\"vocab_size\" must be positive"},
      {R"("vocab_size": 2.5, "d_model": 8, "n_heads": 2, "positional_encoding": "none")",
       "\"vocab_size\" must be a positive integer"},
  };
  for (const auto& [sizes, want] : cases) {
    const std::string config = std::string("{") + sizes + R"(, "d_ff": 16, "n_layers": 1})";
    EXPECT_NE(error_of(config).find(want), std::string::npos) << config << ": " << error_of(config);
  }
  EXPECT_NE(error_of(with(R"("tokenizer": "../../etc/passwd")")).find("inside the model directory"), std::string::npos);
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

// ALiBi's names: "alibi-pairs" is ordo's pairs of one-sided heads, "alibi" (its first name, in
// models/position-alibi's config.json) is read as the same scheme, and a config written now says
// "alibi-pairs"; "alibi-symmetric" is the one slope both ways.
TEST(Config, AlibiNames) {
  auto with = [](const std::string& name) {
    return parse_config(R"({"vocab_size": 100, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, )"
                        R"("positional_encoding": ")" +
                            name + "\"}",
                        "config.json");
  };
  EXPECT_EQ(with("alibi").positional_encoding, PositionalEncoding::Alibi);
  EXPECT_EQ(with("alibi-pairs").positional_encoding, PositionalEncoding::Alibi);
  EXPECT_EQ(with("alibi-symmetric").positional_encoding, PositionalEncoding::AlibiSymmetric);
  EXPECT_STREQ(to_string(PositionalEncoding::Alibi), "alibi-pairs");
  EXPECT_NE(config_to_json(with("alibi")).find("\"alibi-pairs\""), std::string::npos);
}

// alibi_slopes: one positive number per head, for the two ALiBi schemes only; written back as given.
TEST(Config, AlibiSlopes) {
  auto with = [](const std::string& pe, const std::string& slopes) {
    return parse_config(R"({"vocab_size": 100, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, )"
                        R"("positional_encoding": ")" +
                            pe + "\", \"alibi_slopes\": " + slopes + "}",
                        "config.json");
  };
  const Config c = with("alibi-pairs", "[0.5, 0.125]");
  EXPECT_EQ(c.alibi_slopes, (std::vector<double>{0.5, 0.125}));
  EXPECT_EQ(parse_config(config_to_json(c), "x").alibi_slopes, c.alibi_slopes);
  EXPECT_EQ(with("alibi-symmetric", "[1, 2]").alibi_slopes, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(with("alibi-pairs", "null").alibi_slopes, std::vector<double>{});  // the default rule
  for (const char* bad : {"[0.5]", "[0.5, 0.1, 0.1]", "[0.5, 0]", "[0.5, -1]", "[0.5, \"x\"]", "0.5"})
    EXPECT_EQ(test::input_error([&] {
                with("alibi-pairs", bad);
              }).rfind("config.json: key \"alibi_slopes\" must be a list of 2 positive numbers, one per head, got ", 0),
              0u)
        << bad;
  EXPECT_EQ(test::input_error([&] { with("rope", "[0.5, 0.125]"); }),
            "config.json: key \"alibi_slopes\" is for \"alibi-pairs\" or \"alibi-symmetric\", not \"rope\"");
}

// t5-buckets needs its two sizes (T5's names for them), a bucket count that splits in four, and a
// max_distance past the exact distances; a config written back keeps them.
TEST(Config, T5Buckets) {
  auto with = [](const std::string& extra) {
    return parse_config(R"({"vocab_size": 100, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1, )"
                        R"("positional_encoding": "t5-buckets")" +
                            extra + "}",
                        "config.json");
  };
  const Config c = with(R"(, "relative_attention_num_buckets": 32, "relative_attention_max_distance": 32)");
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::T5Buckets);
  EXPECT_EQ(c.relative_buckets, 32);
  EXPECT_EQ(c.relative_max_distance, 32);
  EXPECT_STREQ(to_string(PositionalEncoding::T5Buckets), "t5-buckets");
  const Config again = parse_config(config_to_json(c), "config.json");
  EXPECT_EQ(again.positional_encoding, PositionalEncoding::T5Buckets);
  EXPECT_EQ(again.relative_buckets, 32);
  EXPECT_EQ(again.relative_max_distance, 32);
  EXPECT_EQ(test::input_error([&] { with(R"(, "relative_attention_max_distance": 32)"); }),
            "config.json: missing required key \"relative_attention_num_buckets\"");
  EXPECT_EQ(test::input_error([&] { with(R"(, "relative_attention_num_buckets": 32)"); }),
            "config.json: missing required key \"relative_attention_max_distance\"");
  EXPECT_EQ(test::input_error(
                [&] { with(R"(, "relative_attention_num_buckets": 30, "relative_attention_max_distance": 32)"); }),
            "config.json: key \"relative_attention_num_buckets\" (30) must be a multiple of 4 (half the buckets each "
            "side, a half's first half exact)");
  EXPECT_EQ(test::input_error(
                [&] { with(R"(, "relative_attention_num_buckets": 32, "relative_attention_max_distance": 8)"); }),
            "config.json: key \"relative_attention_max_distance\" (8) must be above 8, the exact distances of 32 "
            "buckets");
}

// A Hugging Face T5 directory (config.json under T5Config's names, spiece.model): the encoder's fields,
// T5's defaults for the keys an older config leaves out, and one line naming what ordo does not have.
TEST(Config, T5Directory) {
  test::TempDir dir;
  dir.write("spiece.model", "");  // only its presence picks the tokenizer here
  const std::string sizes = R"("model_type": "t5", "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 1024, )"
                            R"("num_layers": 8, "num_heads": 6)";
  dir.write("config.json", "{" + sizes + R"(, "feed_forward_proj": "gated-gelu", "layer_norm_epsilon": 1e-06})");
  const Config c = load_config(dir.path + "/config.json");
  EXPECT_EQ(c.family, Family::T5);
  EXPECT_EQ(c.head_dim(), 64);
  EXPECT_EQ(c.attention_width(), 384);  // flan-t5-small's: 6 × 64, not d_model
  EXPECT_TRUE(c.gated_ffn);
  EXPECT_EQ(c.activation, Activation::GELUTanh);  // "gated-gelu" is transformers' gelu_new
  EXPECT_EQ(c.norm, Norm::RMS);
  EXPECT_TRUE(c.norm_first && c.final_norm);
  EXPECT_FALSE(c.scale_attention || c.scale_embedding || c.add_bos);
  EXPECT_TRUE(c.add_eos);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::T5Buckets);
  EXPECT_EQ(c.relative_buckets, 32);  // T5Config's defaults
  EXPECT_EQ(c.relative_max_distance, 128);
  EXPECT_EQ(c.tokenizer, "spiece.model");
  dir.write("config.json", "{" + sizes + R"(, "feed_forward_proj": "gelu"})");
  const Config plain = load_config(dir.path + "/config.json");
  EXPECT_FALSE(plain.gated_ffn);
  EXPECT_EQ(plain.activation, Activation::GELU);  // a plain "gelu" is the erf one
  EXPECT_EQ(plain.layer_norm_eps, 1e-6);
  dir.write("config.json", "{" + sizes + R"(, "feed_forward_proj": "gated-silu"})");
  EXPECT_NE(test::input_error([&] {
              load_config(dir.path + "/config.json");
            }).find("key \"feed_forward_proj\" must be \"relu\" | \"gated-relu\""),
            std::string::npos);
  dir.write("config.json", "{" + sizes + "}");
  dir.write("modules.json",
            R"([{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
  EXPECT_EQ(
      test::input_error([&] { load_config(dir.path + "/config.json"); }),
      dir.path +
          "/modules.json: has a Dense module before the pooling; ordo applies Dense modules to the pooled vector, "
          "before Normalize");
}

// sentence-transformers' modules beside a BERT config: each pooling mode by ordo's name, Dense modules in
// order (each one's in_features the width before it), Normalize; one line for what ordo refuses.
TEST(Config, SentenceTransformersModules) {
  test::TempDir dir;
  for (const char* sub : {"/1_Pooling", "/2_Dense", "/3_Dense"}) ::mkdir((dir.path + sub).c_str(), 0755);
  dir.write("vocab.txt", "");
  dir.write("config.json", R"({"model_type": "bert", "vocab_size": 50, "hidden_size": 8, "num_attention_heads": 2, )"
                           R"("intermediate_size": 16, "num_hidden_layers": 1, "max_position_embeddings": 20})");
  const std::string transformer =
      R"({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"})";
  const std::string pooling =
      R"({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})";
  const auto dense = [](int i) {
    return R"({"idx": )" + std::to_string(i) + R"(, "name": "x", "path": ")" + std::to_string(i) +
           R"(_Dense", "type": "sentence_transformers.models.Dense"})";
  };
  const std::string normalize =
      R"({"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"})";
  const std::string cfg = dir.path + "/config.json";
  const auto modes = [&](const std::string& keys) {
    dir.write("1_Pooling/config.json", R"({"word_embedding_dimension": 8, )" + keys + "}");
  };
  dir.write("modules.json", "[" + transformer + ", " + pooling + "]");
  const std::pair<const char*, const char*> names[] = {{"pooling_mode_cls_token", "first"},
                                                       {"pooling_mode_max_tokens", "max"},
                                                       {"pooling_mode_mean_tokens", "mean"},
                                                       {"pooling_mode_mean_sqrt_len_tokens", "mean-sqrt-len"},
                                                       {"pooling_mode_weightedmean_tokens", "weighted-mean"},
                                                       {"pooling_mode_lasttoken", "last"}};
  for (const auto& [key, name] : names) {
    modes(std::string("\"") + key + "\": true, \"include_prompt\": true");
    EXPECT_EQ(load_config(cfg).pooling, name) << key;
  }
  modes(R"("pooling_mode_mean_tokens": true, "pooling_mode_lasttoken": true)");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path +
                "/1_Pooling/config.json: asks for 2 poolings at once (pooling_mode_mean_tokens, "
                "pooling_mode_lasttoken), which sentence-transformers concatenates; ordo pools one way at a time");
  modes(R"("pooling_mode_mean_tokens": false)");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path + "/1_Pooling/config.json: sets no pooling_mode_... key true: it asks for no pooling ordo knows");

  // Pooling, two Dense modules (8 -> 5 tanh, 5 -> 3 identity without bias), Normalize
  modes(R"("pooling_mode_mean_tokens": true)");
  dir.write(
      "2_Dense/config.json",
      R"({"in_features": 8, "out_features": 5, "bias": true, "activation_function": "torch.nn.modules.activation.Tanh"})");
  dir.write(
      "3_Dense/config.json",
      R"({"in_features": 5, "out_features": 3, "bias": false, "activation_function": "torch.nn.modules.linear.Identity"})");
  dir.write("modules.json",
            "[" + transformer + ", " + pooling + ", " + dense(2) + ", " + dense(3) + ", " + normalize + "]");
  const Config c = load_config(cfg);
  ASSERT_EQ(c.dense.size(), size_t(2));
  EXPECT_EQ(c.dense[0].path, "2_Dense");
  EXPECT_EQ(c.dense[0].in_features, 8);
  EXPECT_EQ(c.dense[0].out_features, 5);
  EXPECT_TRUE(c.dense[0].bias);
  EXPECT_EQ(c.dense[0].activation, DenseActivation::Tanh);
  EXPECT_EQ(c.dense[1].in_features, 5);
  EXPECT_EQ(c.dense[1].out_features, 3);
  EXPECT_FALSE(c.dense[1].bias);
  EXPECT_EQ(c.dense[1].activation, DenseActivation::Identity);
  EXPECT_TRUE(c.normalize);
  EXPECT_EQ(c.pooling, "mean");
  for (auto [name, act] :
       {std::pair{"activation.ReLU", DenseActivation::ReLU}, std::pair{"activation.Sigmoid", DenseActivation::Sigmoid},
        std::pair{"activation.GELU", DenseActivation::GELU}}) {
    dir.write("3_Dense/config.json",
              R"({"in_features": 5, "out_features": 3, "activation_function": "torch.nn.modules.)" + std::string(name) +
                  "\"}");
    EXPECT_EQ(load_config(cfg).dense[1].activation, act) << name;
    EXPECT_TRUE(load_config(cfg).dense[1].bias);  // sentence-transformers' default
  }
  // the second Dense reads 5 numbers, not 8; an activation ordo does not have; sizes missing
  dir.write("3_Dense/config.json",
            R"({"in_features": 8, "out_features": 3, "activation_function": "torch.nn.modules.activation.Tanh"})");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path + "/3_Dense/config.json: key \"in_features\" is 8, but the vector before it has 5 numbers");
  dir.write("3_Dense/config.json",
            R"({"in_features": 5, "out_features": 3, "activation_function": "torch.nn.modules.activation.SiLU"})");
  EXPECT_NE(test::input_error([&] {
              load_config(cfg);
            }).find("3_Dense/config.json: key \"activation_function\" must be \"torch.nn.modules.linear.Identity\" | "),
            std::string::npos);
  dir.write("3_Dense/config.json", R"({"in_features": 5, "activation_function": "torch.nn.modules.activation.Tanh"})");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path + "/3_Dense/config.json: missing required key \"out_features\"");
  // a Dense module without its config, after Normalize, outside the directory
  dir.write("modules.json", "[" + transformer + ", " + pooling + ", " + dense(5) + "]");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path +
                "/5_Dense/config.json: cannot open (a Dense module's in_features, out_features, bias, "
                "activation_function)");
  dir.write("modules.json", "[" + transformer + ", " + pooling + ", " + normalize + ", " + dense(2) + "]");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path +
                "/modules.json: has a Dense module after Normalize; ordo applies Dense modules to the pooled vector, "
                "before Normalize");
  dir.write("modules.json",
            "[" + transformer + ", " + pooling +
                R"(, {"idx": 2, "name": "2", "path": "../2_Dense", "type": "sentence_transformers.models.Dense"}])");
  EXPECT_EQ(test::input_error([&] { load_config(cfg); }),
            dir.path +
                "/modules.json: names a Dense module's directory \"../2_Dense\", which is not a directory inside "
                "the model's");
}

// all-mpnet-base-v2's config.json: RoBERTa's positions from row 2 whatever pad_token_id says (MPNetEmbeddings
// fixes padding_idx at 1), no token types, and T5's 32 buckets to distance 128 from a table of
// relative_attention_num_buckets rows, at least 32.
TEST(Config, MPNetDirectory) {
  test::TempDir dir;
  dir.write("vocab.txt", "");  // only its presence picks the tokenizer here
  const std::string sizes = R"("model_type": "mpnet", "vocab_size": 30527, "hidden_size": 768, )"
                            R"("num_attention_heads": 12, "intermediate_size": 3072, "num_hidden_layers": 12, )"
                            R"("max_position_embeddings": 514, "layer_norm_eps": 1e-05, "hidden_act": "gelu")";
  dir.write("config.json", "{" + sizes + R"(, "pad_token_id": 0, "relative_attention_num_buckets": 32})");
  const Config c = load_config(dir.path + "/config.json");
  EXPECT_EQ(c.family, Family::MPNet);
  EXPECT_TRUE(c.bucket_bias() && c.positions_skip_pads() && c.embedding_norm && c.scale_attention);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(c.position_offset, 2);
  EXPECT_EQ(c.token_types, 0);
  EXPECT_EQ(c.relative_buckets, 32);
  EXPECT_EQ(c.relative_max_distance, 128);
  EXPECT_EQ(c.relative_table_rows, 32);
  EXPECT_EQ(c.layer_norm_eps, 1e-5);
  EXPECT_TRUE(c.add_bos && c.add_eos);
  EXPECT_EQ(position_limit(c), 512);
  EXPECT_EQ(c.tokenizer, "vocab.txt");
  dir.write("config.json", "{" + sizes + R"(, "relative_attention_num_buckets": 48})");
  EXPECT_EQ(load_config(dir.path + "/config.json").relative_table_rows, 48);
  EXPECT_EQ(load_config(dir.path + "/config.json").relative_buckets, 32);
  dir.write("config.json", "{" + sizes + R"(, "relative_attention_num_buckets": 16})");
  EXPECT_EQ(test::input_error([&] { load_config(dir.path + "/config.json"); }),
            dir.path +
                "/config.json: key \"relative_attention_num_buckets\" is 16, fewer than the 32 buckets MPNet looks up");
}

// distilbert-base-uncased's config.json (DistilBertConfig's names): BERT's post-LN layers and learned
// positions from row 0, no token types, every LayerNorm's eps 1e-12 whatever a config adds, and the
// position table read from the file whether sinusoidal_pos_embds says it was filled with sinusoids or not.
TEST(Config, DistilBertDirectory) {
  test::TempDir dir;
  dir.write("vocab.txt", "");  // only its presence picks the tokenizer here
  const std::string sizes = R"("model_type": "distilbert", "vocab_size": 30522, "dim": 768, "n_heads": 12, )"
                            R"("hidden_dim": 3072, "n_layers": 6, "max_position_embeddings": 512, "pad_token_id": 0)";
  dir.write("config.json", "{" + sizes + R"(, "activation": "gelu", "sinusoidal_pos_embds": false})");
  const Config c = load_config(dir.path + "/config.json");
  EXPECT_EQ(c.family, Family::DistilBert);
  EXPECT_EQ(std::string(to_string(c.family)), "distilbert");
  EXPECT_EQ(c.d_model, 768);
  EXPECT_EQ(c.n_heads, 12);
  EXPECT_EQ(c.d_ff, 3072);
  EXPECT_EQ(c.n_layers, 6);
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.activation, Activation::GELU);
  EXPECT_FALSE(c.norm_first || c.final_norm || c.scale_embedding || c.positions_skip_pads() || c.bucket_bias());
  EXPECT_TRUE(c.embedding_norm && c.scale_attention && c.add_bos && c.add_eos);
  EXPECT_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(c.position_offset, 0);
  EXPECT_EQ(c.token_types, 0);
  EXPECT_EQ(position_limit(c), 512);
  EXPECT_EQ(c.tokenizer, "vocab.txt");
  // the tanh GELUs, ReLU, the defaults (gelu); eps and sinusoids change nothing of the config
  dir.write("config.json", "{" + sizes + R"(, "activation": "gelu_new", "sinusoidal_pos_embds": true})");
  EXPECT_EQ(load_config(dir.path + "/config.json").activation, Activation::GELUTanh);
  EXPECT_EQ(load_config(dir.path + "/config.json").positional_encoding, PositionalEncoding::Learned);
  dir.write("config.json", "{" + sizes + R"(, "activation": "relu", "layer_norm_eps": 1e-5})");
  EXPECT_EQ(load_config(dir.path + "/config.json").activation, Activation::ReLU);
  EXPECT_EQ(load_config(dir.path + "/config.json").layer_norm_eps, 1e-12);
  dir.write("config.json", "{" + sizes + "}");
  EXPECT_EQ(load_config(dir.path + "/config.json").activation, Activation::GELU);
  // BERT's names are not DistilBERT's; a bad activation or flag is one line naming the key
  dir.write("config.json", R"({"model_type": "distilbert", "vocab_size": 30522, "hidden_size": 768})");
  EXPECT_EQ(test::input_error([&] { load_config(dir.path + "/config.json"); }),
            dir.path + "/config.json: missing required key \"dim\"");
  dir.write("config.json", "{" + sizes + R"(, "activation": "silu"})");
  EXPECT_EQ(test::input_error([&] { load_config(dir.path + "/config.json"); }),
            dir.path +
                "/config.json: key \"activation\" must be \"gelu\" | \"relu\" | \"gelu_new\" | "
                "\"gelu_pytorch_tanh\" | \"gelu_fast\", got \"silu\"");
  dir.write("config.json", "{" + sizes + R"(, "sinusoidal_pos_embds": "yes"})");
  EXPECT_EQ(test::input_error([&] { load_config(dir.path + "/config.json"); }),
            dir.path + "/config.json: key \"sinusoidal_pos_embds\" must be true or false, got \"yes\"");
  dir.write("config.json", R"({"model_type": "distilbert", "vocab_size": 30522, "dim": 768, "n_heads": 5, )"
                           R"("hidden_dim": 3072, "n_layers": 6, "max_position_embeddings": 512})");
  EXPECT_EQ(test::input_error([&] { load_config(dir.path + "/config.json"); }),
            dir.path + "/config.json: key \"dim\" (768) must be divisible by \"n_heads\" (5)");
}

}  // namespace
}  // namespace ordo
