// The encoder: against the plain encoder in double (engine/reference.h), the word-order
// properties, batching, and the seeded initialiser.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <thread>

#include <ordo/engine/encoder.h>
#include <ordo/errors.h>

#include "engine/init.h"
#include "engine/kernels/parallel.h"
#include "engine/kernels/reduced.h"
#include "engine/ops.h"
#include "engine/reference.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;

Config small_config() {
  return test::sized_config(50, 12, 3, 20, 2);
}

// A model whose every tensor is random, biases and LayerNorm parameters included, so that a
// wrong wire shows.
Model random_model(const Config& c, const std::string& dir, uint64_t seed = 1) {
  test::write_random_weights(c, dir, seed);
  return Model(c, dir + "/model.safetensors");
}

// An encoder over a random small model with positions `p`.
struct RandomEncoder {
  explicit RandomEncoder(PositionalEncoding p) : model(random_model(with(p), dir.path)), enc(model) {}
  static Config with(PositionalEncoding p) {
    Config c = small_config();
    c.positional_encoding = p;
    if (p == PositionalEncoding::T5Buckets) c.relative_buckets = 8, c.relative_max_distance = 5;
    return c;
  }
  test::TempDir dir;
  Model model;
  Encoder enc;
};

// max |h − ref| over sequence b's rows; ref (L, d) from reference::forward.
double diff_to_reference(const Hidden& h, int b, const std::vector<double>& ref) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(h.row(b, int(i / h.d))[i % h.d] - ref[i]));
  return worst;
}

// The fast encoder on a padded batch against the plain one on each sequence, with and without positions.
void expect_batch_matches_reference(Encoder& enc, const Model& m, const std::vector<std::vector<int32_t>>& ids,
                                    const std::string& name) {
  for (bool positions : {true, false}) {
    EncodeOptions o;
    o.positions = positions;
    const Hidden h = enc.forward(ids, o);
    for (size_t b = 0; b < ids.size(); ++b) {
      const double diff = diff_to_reference(h, int(b), reference::forward(m, ids[b], positions));
      EXPECT_LT(diff, 2e-5) << name << (positions ? "" : ", no positions") << ", sequence " << b;
    }
  }
}

// The watched pass (an observe callback, as trace runs it) gives the plain pass's rows, returned.
Hidden expect_watching_changes_nothing(Encoder& enc, const std::vector<int32_t>& ids, const std::string& name) {
  EncodeOptions watched;
  int stages = 0;
  watched.observe = [&](const Stage&) { ++stages; };
  const Hidden w = enc.forward({ids}, watched), plain = enc.forward({ids});
  EXPECT_GT(stages, 0) << name;
  EXPECT_LT(max_abs_diff(w.data.data(), plain.data.data(), plain.data.size()), 1e-5) << name;
  return plain;
}

// At int8 (where oneDNN is) each row stays near f32's `plain`: a cosine above 0.99.
void expect_int8_rows_near(Encoder& enc, const std::vector<int32_t>& ids, const Hidden& plain,
                           const std::string& name) {
  if (!have_onednn()) return;
  enc.set_compute_type(ComputeType::Int8);
  const Hidden q = enc.forward({ids});
  enc.set_compute_type(ComputeType::F32);
  for (int t = 0; t < int(ids.size()); ++t) {
    double dot = 0, qq = 0, pp = 0;
    for (int j = 0; j < plain.d; ++j) {
      const double a = q.row(0, t)[j], b = plain.row(0, t)[j];
      dot += a * b, qq += a * a, pp += b * b;
    }
    EXPECT_GT(dot / std::sqrt(qq * pp), 0.99) << name << ", int8, row " << t;
  }
}

struct Variant {
  const char* name;
  void (*apply)(Config&);
};

TEST(Encoder, MatchesThePlainEncoderInDouble) {
  const Variant variants[] = {
      {"post-LN relu", [](Config&) {}},
      {"pre-LN gelu final norm",
       [](Config& c) { c.norm_first = true, c.activation = Activation::GELU, c.final_norm = true; }},
      {"split layout, no scaling", [](Config& c) { c.pe_layout = PeLayout::Split, c.scale_embedding = false; }},
      {"learned positions",
       [](Config& c) { c.positional_encoding = PositionalEncoding::Learned, c.max_positions = 40; }},
      {"no positions", [](Config& c) { c.positional_encoding = PositionalEncoding::None; }},
      {"odd width, head size 5", [](Config& c) { c.d_model = 15, c.n_heads = 3, c.pe_layout = PeLayout::Split; }},
      {"rope", [](Config& c) { c.positional_encoding = PositionalEncoding::Rope; }},
      {"rope, head size 5, base 500",
       [](Config& c) { c.positional_encoding = PositionalEncoding::Rope, c.d_model = 15, c.pe_base = 500; }},
      {"alibi, 3 heads", [](Config& c) { c.positional_encoding = PositionalEncoding::Alibi; }},
      {"alibi, 4 heads, pre-LN",
       [](Config& c) { c.positional_encoding = PositionalEncoding::Alibi, c.n_heads = 4, c.norm_first = true; }},
      {"alibi-symmetric, 3 heads", [](Config& c) { c.positional_encoding = PositionalEncoding::AlibiSymmetric; }},
      {"alibi-pairs, 4 heads, slopes given",
       [](Config& c) {
         c.positional_encoding = PositionalEncoding::Alibi, c.n_heads = 4, c.alibi_slopes = {0.5, 0.5, 0.125, 0.125};
       }},
      {"alibi-symmetric, 3 heads, slopes given",
       [](Config& c) {
         c.positional_encoding = PositionalEncoding::AlibiSymmetric, c.alibi_slopes = {1.0, 0.3, 0.01};
       }},
      // 7 pieces: offsets to ±6, past max_distance 5 (the last bucket of each side); and ordo's 32 to 32
      {"t5-buckets, 8 buckets to distance 5",
       [](Config& c) {
         c.positional_encoding = PositionalEncoding::T5Buckets, c.relative_buckets = 8, c.relative_max_distance = 5;
       }},
      {"t5-buckets, 32 buckets to distance 32, 4 heads, pre-LN",
       [](Config& c) {
         c.positional_encoding = PositionalEncoding::T5Buckets, c.relative_buckets = 32, c.relative_max_distance = 32;
         c.n_heads = 4, c.norm_first = true;
       }},
  };
  for (const Variant& v : variants) {
    Config c = small_config();
    v.apply(c);
    test::TempDir dir;
    const Model m = random_model(c, dir.path);
    Encoder enc(m);
    const std::vector<std::vector<int32_t>> ids = {{1, 4, 9, 16, 25, 36, 49}, {2}, {7, 7, 3}};
    const Hidden h = enc.forward(ids);
    for (int b = 0; b < 3; ++b) {
      const double diff = diff_to_reference(h, b, reference::forward(m, ids[b]));
      EXPECT_LT(diff, 2e-5) << v.name << ", sequence " << b << ": max |ordo - reference| = " << diff;
    }
    EncodeOptions off;  // --no-pe: without the rotation or the bias too
    off.positions = false;
    const Hidden h0 = enc.forward(ids, off);
    for (int b = 0; b < 3; ++b)
      EXPECT_LT(diff_to_reference(h0, b, reference::forward(m, ids[b], false)), 2e-5) << v.name;
  }
}

// A Hugging Face encoder (BertModel's tensor names, embedding LayerNorm, token-type row, position
// offset; DistilBertModel's names, no token types) with random weights: the fast encoder on a padded batch held to the
// plain one, with and without positions.
TEST(Encoder, HuggingFaceEncoderMatchesThePlainEncoder) {
  struct Case {
    const char* name;
    Family family;
    Activation act;
    int token_types;
  };
  const Case cases[] = {{"bert, gelu", Family::Bert, Activation::GELU, 2},
                        {"bert, gelu-tanh, one token type", Family::Bert, Activation::GELUTanh, 1},
                        {"roberta, offset 2, relu", Family::Roberta, Activation::ReLU, 1},
                        {"distilbert, gelu, no token types", Family::DistilBert, Activation::GELU, 0}};
  for (const Case& k : cases) {
    Config c;
    c.vocab_size = 53, c.d_model = 15, c.n_heads = 3, c.d_ff = 37, c.n_layers = 2;
    c.family = k.family, c.activation = k.act, c.token_types = k.token_types;
    c.positional_encoding = PositionalEncoding::Learned, c.max_positions = 24, c.scale_embedding = false;
    c.embedding_norm = true, c.layer_norm_eps = 1e-12;
    c.position_offset = k.family == Family::Roberta ? 2 : 0;
    std::vector<TensorBytes> tensors;
    uint32_t state = 38;
    for (const TensorSpec& t : expected_tensors(c)) {
      uint64_t n = 1;
      for (uint64_t e : t.shape) n *= e;
      std::vector<float> v(n);
      for (float& x : v) {
        state = state * 1664525u + 1013904223u;
        x = float(state >> 8) / float(1u << 24) - 0.5f;
      }
      tensors.push_back(f32_tensor(t.name, t.shape, v));
    }
    test::TempDir dir;
    write_safetensors(dir.path + "/model.safetensors", tensors);
    const Model m(c, dir.path + "/model.safetensors");
    Encoder enc(m);
    // for RoBERTa id 1 is <pad> (padding_idx = offset − 1): in a text it takes row 1 and the rows after it
    // shift back, in both encoders
    const std::vector<std::vector<int32_t>> ids = {{1, 4, 9, 16, 25, 36, 49, 52}, {2}, {7, 7, 3}, {5, 1, 8, 1, 1, 3}};
    expect_batch_matches_reference(enc, m, ids, k.name);
    // the table's last usable row: max_positions − offset tokens run, one more does not
    EXPECT_NO_THROW(enc.forward({std::vector<int32_t>(size_t(24 - c.position_offset), 5)}));
    EXPECT_THROW(enc.forward({std::vector<int32_t>(size_t(25 - c.position_offset), 5)}), InputError);
  }
}

// A T5 encoder (T5EncoderModel's tensor names): pre-norm RMSNorms and a final one, no biases, no 1/√dh,
// the bucket table shared by the layers, and attention h·d_kv wide where that is not d; with random
// weights, the fast encoder on a padded batch held to the plain one, with and without positions; the
// watched pass (what trace shows) gives the same rows as the batch; heads masked as in the plain one.
TEST(Encoder, T5EncoderMatchesThePlainEncoder) {
  struct Case {
    const char* name;
    int d, h, head_size;
    bool gated;
    Activation act;
  };
  const Case cases[] = {{"relu, 3 heads of 4 in d 10", 10, 3, 4, false, Activation::ReLU},
                        {"gated gelu-tanh, 2 heads of 8 in d 24", 24, 2, 8, true, Activation::GELUTanh},
                        {"gated relu, 4 heads of 3 in d 12", 12, 4, 3, true, Activation::ReLU},
                        {"gelu, 1 head of 16 in d 16", 16, 1, 16, false, Activation::GELU}};
  for (const Case& k : cases) {
    Config c;
    c.vocab_size = 41, c.d_model = k.d, c.n_heads = k.h, c.head_size = k.head_size, c.d_ff = 19, c.n_layers = 2;
    c.family = Family::T5, c.weights_prefix = "shared.", c.activation = k.act, c.gated_ffn = k.gated;
    c.norm = Norm::RMS, c.norm_first = true, c.final_norm = true, c.scale_attention = false;
    c.scale_embedding = false, c.layer_norm_eps = 1e-6;
    c.positional_encoding = PositionalEncoding::T5Buckets, c.relative_buckets = 8, c.relative_max_distance = 5;
    test::TempDir dir;
    const Model m = random_model(c, dir.path, 7);
    ASSERT_EQ(m.weights().layers[0].in_proj_bias, nullptr) << k.name;
    EXPECT_EQ(m.parameter_count(), expected_parameters(c, "test")) << k.name;
    Encoder enc(m);
    const std::vector<std::vector<int32_t>> ids = {{1, 4, 9, 16, 25, 36, 40, 2, 3}, {2}, {7, 7, 3}};
    expect_batch_matches_reference(enc, m, ids, k.name);
    const Hidden plain = expect_watching_changes_nothing(enc, ids[0], k.name);
    // int8 converts the gated FFN's second matrix with the first: the rows stay close to f32's
    expect_int8_rows_near(enc, ids[0], plain, k.name);
    const std::vector<HeadIndex> off = {{1, k.h - 1}};
    enc.set_masked_heads(off);
    EXPECT_LT(diff_to_reference(enc.forward({ids[0]}), 0, reference::forward(m, ids[0], true, off)), 2e-5) << k.name;
  }
}

// An MPNet encoder (MPNetModel's tensor names): RoBERTa's embeddings (positions from row 2, a <pad> in a text
// skipped), BERT's post-LN layers, and T5's bucket bias after the 1/√dh, from one table of at least
// relative_buckets rows shared by the layers. With random weights, the fast encoder on a padded batch held
// to the plain one, with and without positions (which takes the bias away too); the watched pass gives the
// batch's rows; int8 stays near f32; and the bias is there: without its table's values the rows move.
TEST(Encoder, MPNetEncoderMatchesThePlainEncoder) {
  struct Case {
    const char* name;
    int buckets, max_distance, table_rows;
    Activation act;
  };
  // 11 pieces: offsets to ±10, past max_distance 5 (each side's last bucket)
  const Case cases[] = {{"8 buckets to distance 5, gelu", 8, 5, 8, Activation::GELU},
                        {"8 buckets to distance 5 in a table of 12 rows, relu", 8, 5, 12, Activation::ReLU},
                        {"32 buckets to distance 128, gelu-tanh", 32, 128, 32, Activation::GELUTanh}};
  for (const Case& k : cases) {
    Config c;
    c.vocab_size = 53, c.d_model = 15, c.n_heads = 3, c.d_ff = 37, c.n_layers = 2;
    c.family = Family::MPNet, c.activation = k.act, c.token_types = 0;
    c.positional_encoding = PositionalEncoding::Learned, c.max_positions = 24, c.scale_embedding = false;
    c.embedding_norm = true, c.layer_norm_eps = 1e-5, c.position_offset = 2;
    c.relative_buckets = k.buckets, c.relative_max_distance = k.max_distance, c.relative_table_rows = k.table_rows;
    ASSERT_TRUE(c.bucket_bias());
    test::TempDir dir;
    const Model m = random_model(c, dir.path, 11);
    EXPECT_EQ(m.parameter_count(), expected_parameters(c, "test")) << k.name;
    ASSERT_NE(m.weights().layers[1].position_bias, nullptr) << k.name;
    Encoder enc(m);
    // id 1 is <pad>: in a text it takes row 1 and the rows after it shift back, in both encoders
    const std::vector<std::vector<int32_t>> ids = {{0, 4, 9, 16, 25, 36, 49, 52, 3, 8, 2}, {0, 2}, {0, 1, 7, 1, 2}};
    expect_batch_matches_reference(enc, m, ids, k.name);
    const Hidden plain = expect_watching_changes_nothing(enc, ids[0], k.name);
    expect_int8_rows_near(enc, ids[0], plain, k.name);
    // the same weights with the bucket table zeroed: the plain encoder's rows differ
    std::vector<TensorBytes> zeroed;
    for (const TensorInfo& t : m.file().tensors()) {
      zeroed.push_back({t.name, t.dtype, t.shape, std::vector<unsigned char>(t.data, t.data + (t.end - t.begin))});
      if (t.name == "encoder.relative_attention_bias.weight")
        std::fill(zeroed.back().bytes.begin(), zeroed.back().bytes.end(), 0);
    }
    test::TempDir other;
    write_safetensors(other.path + "/model.safetensors", zeroed);
    const Model no_bias(c, other.path + "/model.safetensors");
    EXPECT_GT(diff_to_reference(plain, 0, reference::forward(no_bias, ids[0])), 1e-3) << k.name;
  }
}

// Head masking (--mask-head L,H): the fast encoder against the plain one with the same heads off,
// for every scheme of positions; and by hand, a masked head's slot of the concatenation is zeros
// while the other heads' slots of that layer are what they were, and its weights are still there.
TEST(Encoder, MaskedHeadsMatchThePlainEncoderAndAddNothing) {
  for (PositionalEncoding p : {PositionalEncoding::Sinusoidal, PositionalEncoding::Rope, PositionalEncoding::Alibi,
                               PositionalEncoding::AlibiSymmetric, PositionalEncoding::T5Buckets}) {
    RandomEncoder r(p);
    const Config& c = r.model.config();
    const int d = c.d_model, dh = c.head_dim();
    const std::vector<std::vector<int32_t>> ids = {{1, 4, 9, 16, 25, 36, 49}, {2, 8}};
    const std::vector<std::vector<HeadIndex>> masks = {{{0, 1}}, {{1, 0}, {1, 2}}, {{0, 0}, {0, 1}, {0, 2}}};
    for (const auto& mask : masks) {
      r.enc.set_masked_heads(mask);
      const Hidden h = r.enc.forward(ids);
      for (int b = 0; b < 2; ++b) {
        const double diff = diff_to_reference(h, b, reference::forward(r.model, ids[b], true, mask));
        EXPECT_LT(diff, 2e-5) << to_string(p) << ", " << mask.size() << " heads off, sequence " << b;
      }
      // and the plain encoder with heads off differs from the plain encoder with all heads on
      EXPECT_GT(diff_to_reference(h, 0, reference::forward(r.model, ids[0])), 1e-3) << to_string(p);
    }
    // By hand, in layer 0: head 1 off leaves zeros in columns [dh, 2 dh) of the concatenation, the
    // other columns as with every head on, and head 1's weights unchanged.
    auto concat0 = [&](std::vector<float>* concat, std::vector<float>* weights) {
      EncodeOptions o;
      o.observe = [&](const Stage& s) {
        if (s.layer != 0) return;
        std::vector<float>* to = s.kind == StageKind::HeadsConcatenated                 ? concat
                                 : s.kind == StageKind::AttentionWeights && s.head == 1 ? weights
                                                                                        : nullptr;
        if (!to) return;
        for (int t = 0; t < s.rows; ++t)
          to->insert(to->end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
      };
      r.enc.forward({ids[0]}, o);
    };
    std::vector<float> on, off, w_on, w_off;
    r.enc.set_masked_heads({});
    concat0(&on, &w_on);
    r.enc.set_masked_heads({{0, 1}});
    concat0(&off, &w_off);
    r.enc.set_masked_heads({});
    ASSERT_EQ(on.size(), ids[0].size() * d);
    for (size_t t = 0; t < ids[0].size(); ++t)
      for (int e = 0; e < d; ++e) {
        const float v = off[t * d + e];
        if (e >= dh && e < 2 * dh)
          EXPECT_EQ(v, 0.0f) << to_string(p) << ": row " << t << ", column " << e;
        else
          EXPECT_EQ(v, on[t * d + e]) << to_string(p) << ": row " << t << ", column " << e;
      }
    EXPECT_EQ(w_on, w_off) << to_string(p);
  }
}

TEST(Encoder, MaskingAHeadTheModelDoesNotHaveIsRefused) {
  RandomEncoder r(PositionalEncoding::Sinusoidal);  // 2 layers of 3 heads
  EXPECT_THROW(r.enc.set_masked_heads({{2, 0}}), std::invalid_argument);
  EXPECT_THROW(r.enc.set_masked_heads({{0, 3}}), std::invalid_argument);
  EXPECT_THROW(r.enc.set_masked_heads({{-1, 0}}), std::invalid_argument);
  EXPECT_TRUE(r.enc.masked_heads().empty());  // a refused mask changes nothing
  try {
    r.enc.set_masked_heads({{0, 3}});
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "head 0,3: this model has layers 0 .. 1 and heads 0 .. 2");
  }
}

// max |h(b0, t) − h(b1, to[t])|: how far each token's output moved when it went from place t of
// sequence b0 to place to[t] of sequence b1.
double largest_move(const Hidden& h, int b0, int b1, const std::vector<int>& to) {
  double moved = 0;
  for (size_t t = 0; t < to.size(); ++t)
    for (int j = 0; j < h.d; ++j)
      moved = std::max(moved, double(std::fabs(h.row(b0, int(t))[j] - h.row(b1, to[t])[j])));
  return moved;
}

// With rope or alibi switched off the encoder sees no order, as a model without positions: a
// permutation of the tokens permutes the outputs, and with them on it does not.
TEST(Encoder, RelativeSchemesOffAreOrderBlind) {
  for (PositionalEncoding p : {PositionalEncoding::Rope, PositionalEncoding::Alibi, PositionalEncoding::AlibiSymmetric,
                               PositionalEncoding::T5Buckets}) {
    RandomEncoder r(p);
    Encoder& enc = r.enc;
    const std::vector<int32_t> a = {5, 9, 2, 7}, b = {9, 5, 2, 7};  // b: a's first two swapped
    const std::vector<int> to_b = {1, 0, 2, 3};                     // a's token t stands at to_b[t] in b
    EncodeOptions off;
    off.positions = false;
    EXPECT_LT(largest_move(enc.forward({a, b}, off), 0, 1, to_b), 1e-5) << to_string(p);
    EXPECT_GT(largest_move(enc.forward({a, b}), 0, 1, to_b), 1e-2) << to_string(p);
  }
}

// Symmetric ALiBi sees distances |i − j| only, and reading a text backwards keeps every distance:
// an alibi-symmetric encoder gives a reversed text the same outputs, reversed. ALiBi's pairs of heads
// tell the two apart (each head sees one side), and so does RoPE (its rotation has a direction), and
// T5's buckets (a key before the query and one after it fall in different buckets).
TEST(Encoder, SymmetricAlibiCannotTellATextFromItsReverse) {
  for (PositionalEncoding p : {PositionalEncoding::AlibiSymmetric, PositionalEncoding::Alibi, PositionalEncoding::Rope,
                               PositionalEncoding::T5Buckets}) {
    RandomEncoder re(p);
    Encoder& enc = re.enc;
    const std::vector<int32_t> a = {5, 9, 2, 7, 11}, r = {11, 7, 2, 9, 5};
    const double moved = largest_move(enc.forward({a, r}), 0, 1, {4, 3, 2, 1, 0});
    if (p == PositionalEncoding::AlibiSymmetric)
      EXPECT_LT(moved, 1e-5) << to_string(p);
    else
      EXPECT_GT(moved, 1e-2) << to_string(p);
  }
}

TEST(Encoder, WithoutPositionsPermutingTokensPermutesOutputs) {
  test::TempDir dir;
  const Model m = random_model(small_config(), dir.path);
  Encoder enc(m);
  const std::vector<int32_t> a = {3, 10, 20, 30, 3, 40};  // "the cat sat on the mat"
  const std::vector<int32_t> b = {3, 40, 20, 30, 3, 10};  // "the mat sat on the cat"
  const int perm[] = {0, 5, 2, 3, 4, 1};                  // b[i] = a[perm[i]]
  EncodeOptions no_pe;
  no_pe.positions = false;
  const Hidden h = enc.forward({a, b}, no_pe);
  for (int i = 0; i < 6; ++i) EXPECT_LT(max_abs_diff(h.row(1, i), h.row(0, perm[i]), h.d), 1e-5) << "token " << i;

  // With positions the same pair differs: the rows of the moved tokens are not the same.
  const Hidden hp = enc.forward({a, b});
  EXPECT_GT(max_abs_diff(hp.row(1, 1), hp.row(0, 5), hp.d), 1e-2) << "\"mat\" at 1 in b, at 5 in a";
}

TEST(Encoder, BatchEqualsEachTextAlone) {
  for (bool norm_first : {false, true}) {
    Config c = small_config();
    c.norm_first = norm_first;
    test::TempDir dir;
    const Model m = random_model(c, dir.path);
    Encoder enc(m);
    const std::vector<std::vector<int32_t>> ids = {{5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15, 16}, {1}};
    const Hidden batch = enc.forward(ids);
    for (int b = 0; b < 3; ++b) {
      const Hidden alone = enc.forward({ids[b]});
      EXPECT_LT(max_abs_diff(batch.row(b, 0), alone.row(0, 0), size_t(alone.lengths[0]) * alone.d), 1e-5) << b;
      for (int t = batch.lengths[b]; t < batch.S; ++t)
        for (int j = 0; j < batch.d; ++j) ASSERT_EQ(batch.row(b, t)[j], 0.0f) << "padding row " << t;
    }
  }
}

// Attention goes kQueryBlock query rows at a time and the feed-forward layer kFeedForwardRows rows at
// a time; a padded batch longer than both, with sequences ending inside, on and just past a block,
// must still equal the plain encoder sequence by sequence.
TEST(Encoder, LongPaddedBatchInBlocksMatchesThePlainEncoder) {
  Config c = small_config();
  c.d_model = 16, c.n_heads = 2, c.d_ff = 24;
  test::TempDir dir;
  const Model m = random_model(c, dir.path);
  Encoder enc(m);
  const int S = 2 * kQueryBlock + 58;
  std::vector<std::vector<int32_t>> ids;
  for (int L : {S, kQueryBlock + 34, kQueryBlock, kQueryBlock + 1, 1, S, 2 * kQueryBlock, 17, S - 1}) {
    ids.emplace_back(L);
    for (int t = 0; t < L; ++t) ids.back()[t] = (t * 7 + L) % c.vocab_size;
  }
  ASSERT_GT(int(ids.size()) * S, kFeedForwardRows) << "the batch must span two feed-forward blocks";
  const Hidden h = enc.forward(ids);
  for (size_t b = 0; b < ids.size(); ++b) {
    const double diff = diff_to_reference(h, int(b), reference::forward(m, ids[b]));
    EXPECT_LT(diff, 2e-5) << "sequence " << b << " of " << ids[b].size()
                          << " tokens: max |ordo - reference| = " << diff;
    for (int t = h.lengths[b]; t < h.S; ++t)
      for (int j = 0; j < h.d; ++j) ASSERT_EQ(h.row(int(b), t)[j], 0.0f) << "padding row " << t;
  }
}

// The thread contract (encoder.h): one Encoder shared by many threads, while another thread keeps
// changing the thread count, gives every caller what one thread alone gives. Run under
// ThreadSanitizer in CI (ORDO_TSAN).
TEST(Encoder, SharedByThreadsWhileTheThreadCountChanges) {
  test::ThreadsGuard guard;
  Config c = small_config();
  c.d_model = 32, c.n_heads = 4, c.d_ff = 48;
  test::TempDir dir;
  const Model m = random_model(c, dir.path);
  Encoder enc(m);
  // Batches of different shapes: small-M, stream and GEMM products, attention over several blocks.
  std::vector<std::vector<std::vector<int32_t>>> batches;
  for (int B : {1, 3, 2})
    for (int L : {5, 40, kQueryBlock + 30}) {
      batches.emplace_back();
      for (int b = 0; b < B; ++b) {
        batches.back().emplace_back(L - 2 * b);
        for (int t = 0; t < L - 2 * b; ++t) batches.back().back()[t] = (t * 13 + 7 * b + B) % c.vocab_size;
      }
    }
  set_num_threads(1);
  std::vector<Hidden> alone;
  for (const auto& ids : batches) alone.push_back(enc.forward(ids));

  std::atomic<int> passes{0}, mismatches{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 6; ++r) {
        const size_t k = (size_t(i) * 5 + r) % batches.size();
        const Hidden h = enc.forward(batches[k]);
        if (h.data != alone[k].data) ++mismatches;  // the same arithmetic at any thread count: bit for bit
        ++passes;
      }
    });
  threads.emplace_back([&] {  // the thread count changes all along, until the encoding is over
    for (int r = 0; !done; ++r) set_num_threads(1 + r % 4);
  });
  for (int i = 0; i < 6; ++i) threads[i].join();
  done = true;
  threads.back().join();
  EXPECT_EQ(passes, 36);
  EXPECT_EQ(mismatches, 0) << "passes whose result differs from the same batch on one thread";
}

TEST(Encoder, SetNumThreadsFromAnObserverIsRefused) {
  test::ThreadsGuard guard;
  test::TempDir dir;
  const Model m = random_model(small_config(), dir.path);
  Encoder enc(m);
  EncodeOptions options;
  int refused = 0;
  options.observe = [&](const Stage&) {
    try {
      set_num_threads(2);
    } catch (const std::logic_error&) {
      ++refused;
    }
  };
  enc.forward({{1, 2, 3}}, options);
  EXPECT_GT(refused, 0);
  set_num_threads(2);  // and outside a pass it works
  EXPECT_EQ(kernel_threads(), 2);
}

// The watched pass (engine/watch.cpp) is forward() one step at a time: the same kernels on the same
// floats, so for a sequence of at most kQueryBlock pieces (forward's blocks of query rows are then the
// whole sequence too) its output is forward()'s to the bit, and beyond within float rounding; its last
// stage is that output; a batch with an observer gives the batch's own output while the observer
// sees the first sequence alone; every position scheme, masked heads, pre-LN and GELU, int8.
TEST(Encoder, TheWatchedPassIsForwardOneStepAtATime) {
  const PositionalEncoding schemes[] = {PositionalEncoding::None,    PositionalEncoding::Sinusoidal,
                                        PositionalEncoding::Learned, PositionalEncoding::Rope,
                                        PositionalEncoding::Alibi,   PositionalEncoding::AlibiSymmetric};
  for (const PositionalEncoding p : schemes)
    for (int variant = 0; variant < 3; ++variant) {
      Config c = small_config();
      c.positional_encoding = p;
      c.max_positions = 160;
      if (variant == 1) c.norm_first = true, c.final_norm = true, c.activation = Activation::GELU;
      test::TempDir dir;
      const Model m = random_model(c, dir.path, 7 + variant);
      Encoder enc(m);
      if (variant == 2) enc.set_masked_heads({{0, 1}, {1, 2}});
      for (const int L : {7, kQueryBlock, kQueryBlock + 37}) {
        std::vector<int32_t> ids(L);
        for (int t = 0; t < L; ++t) ids[t] = (t * 7 + 3) % c.vocab_size;
        const std::string what =
            std::string(to_string(p)) + ", variant " + std::to_string(variant) + ", L " + std::to_string(L);
        std::vector<float> last;
        int stages = 0, rows_other_than_L = 0;
        EncodeOptions watched;
        watched.observe = [&](const Stage& s) {
          ++stages;
          if (s.rows != L) ++rows_other_than_L;
          last.clear();
          for (int t = 0; t < s.rows; ++t)
            last.insert(last.end(), s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
        };
        const Hidden w = enc.watch(ids, watched), f = enc.forward({ids});
        ASSERT_EQ(w.data.size(), f.data.size()) << what;
        EXPECT_EQ(std::vector<float>(w.data.begin(), w.data.end()), last) << what << ": the last stage is the output";
        if (L <= kQueryBlock)
          EXPECT_EQ(w.data, f.data) << what;
        else
          EXPECT_LT(max_abs_diff(w.data.data(), f.data.data(), w.data.size()), 1e-5) << what;
        // per layer: q|k|v, (rope's turn,) 7 or 8 per head, concatenation, projection, two residuals, FFN hidden
        const int per_head = (p == PositionalEncoding::Alibi || p == PositionalEncoding::AlibiSymmetric) ? 8 : 7;
        const int per_layer = 1 + (p == PositionalEncoding::Rope) + c.n_heads * per_head + 5;
        const int embedding =
            2 + (c.scale_embedding ? 1 : 0) + (p == PositionalEncoding::Sinusoidal || p == PositionalEncoding::Learned);
        EXPECT_EQ(stages, embedding + c.n_layers * per_layer + (c.final_norm ? 1 : 0)) << what;
        EXPECT_EQ(rows_other_than_L, 0) << what;

        // a batch with an observer: the batch's output as without one, the observer seeing sequence 0 only
        const std::vector<std::vector<int32_t>> batch = {ids, {1, 2, 3}};
        stages = 0, rows_other_than_L = 0;
        const Hidden b = enc.forward(batch, watched), plain = enc.forward(batch);
        EXPECT_EQ(b.data, plain.data) << what;
        EXPECT_GT(stages, 0) << what;
        EXPECT_EQ(rows_other_than_L, 0) << what;
      }
      if (variant == 0 && have_own_kernel(ComputeType::Int8)) {  // the pass's compute type holds when watched
        enc.set_compute_type(ComputeType::Int8);
        const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9, 2, 6};
        EncodeOptions watched;
        watched.observe = [](const Stage&) {};
        EXPECT_EQ(enc.watch(ids, watched).data, enc.forward({ids}).data) << to_string(p) << ", int8";
      }
    }
}

// One head's inside, as an observer sees it: the scores are q·kᵀ of the head's columns of the
// q | k | v stage (float64 here), their softmax after ÷√dh is the attention weights the fast path
// computed, and the head's output is A·v and the head's columns of the heads concatenated.
TEST(Encoder, ObservedHeadInsideIsConsistent) {
  test::TempDir dir;
  const Config c = small_config();
  const Model m = random_model(c, dir.path);
  Encoder enc(m);
  const int d = c.d_model, dh = c.head_dim();
  std::map<std::pair<int, int>, std::vector<std::vector<float>>> seen;  // (kind, layer·h + head) -> rows
  std::vector<float> qkv, concat;
  EncodeOptions options;
  options.observe = [&](const Stage& s) {
    std::vector<std::vector<float>> rows;
    for (int t = 0; t < s.rows; ++t)
      rows.emplace_back(s.data + size_t(t) * s.stride, s.data + size_t(t) * s.stride + s.cols);
    seen[{int(s.kind), s.layer * c.n_heads + std::max(s.head, 0)}] = rows;
  };
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9, 2};
  const int L = int(ids.size());
  enc.forward({ids}, options);
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& x = seen.at({int(StageKind::Qkv), l * c.n_heads});
    const auto& heads = seen.at({int(StageKind::HeadsConcatenated), l * c.n_heads});
    for (int h = 0; h < c.n_heads; ++h) {
      const int key = l * c.n_heads + h;
      const auto& q = seen.at({int(StageKind::HeadQuery), key});
      const auto& k = seen.at({int(StageKind::HeadKey), key});
      const auto& v = seen.at({int(StageKind::HeadValue), key});
      const auto& scores = seen.at({int(StageKind::AttentionScores), key});
      const auto& scaled = seen.at({int(StageKind::ScaledScores), key});
      const auto& A = seen.at({int(StageKind::AttentionWeights), key});
      const auto& out = seen.at({int(StageKind::HeadOutput), key});
      ASSERT_EQ(q.size(), size_t(L));
      for (int i = 0; i < L; ++i) {
        for (int e = 0; e < dh; ++e) {
          EXPECT_EQ(q[i][e], x[i][h * dh + e]);
          EXPECT_EQ(k[i][e], x[i][d + h * dh + e]);
          EXPECT_EQ(v[i][e], x[i][2 * d + h * dh + e]);
          EXPECT_EQ(out[i][e], heads[i][h * dh + e]);
        }
        double zmax = -1e300, zsum = 0;
        for (int j = 0; j < L; ++j) {
          double dot = 0;
          for (int e = 0; e < dh; ++e) dot += double(q[i][e]) * k[j][e];
          EXPECT_NEAR(scores[i][j], dot, 1e-5 * std::max(1.0, std::fabs(dot)));
          EXPECT_NEAR(scaled[i][j], dot / std::sqrt(double(dh)), 1e-5 * std::max(1.0, std::fabs(dot)));
          zmax = std::max(zmax, double(scaled[i][j]));
        }
        for (int j = 0; j < L; ++j) zsum += std::exp(scaled[i][j] - zmax);
        for (int e = 0; e < dh; ++e) {
          double av = 0;
          for (int j = 0; j < L; ++j) {
            const double p = std::exp(scaled[i][j] - zmax) / zsum;
            if (e == 0) {
              EXPECT_NEAR(A[i][j], p, 1e-6);
            }
            av += p * v[j][e];
          }
          EXPECT_NEAR(out[i][e], av, 1e-5 * std::max(1.0, std::fabs(av)));
        }
      }
    }
  }
}

// No texts, or only empty ones: a library caller gets an empty result, not a crash.
TEST(Encoder, EmptyBatchesGiveEmptyResults) {
  test::TempDir dir;
  const Model m = random_model(small_config(), dir.path);
  Encoder enc(m);
  const Hidden none = enc.forward({});
  EXPECT_EQ(none.B, 0);
  EXPECT_TRUE(none.data.empty());
  const Hidden empty = enc.forward({{}, {}});
  EXPECT_EQ(empty.B, 2);
  EXPECT_EQ(empty.S, 0);
  EXPECT_EQ(empty.lengths, (std::vector<int>{0, 0}));
  EXPECT_TRUE(empty.data.empty());
  const Hidden after = enc.forward({{1, 2}});  // and the encoder still works afterwards
  EXPECT_EQ(after.S, 2);
}

TEST(Encoder, RejectsBadIdsAndTooLongForLearnedPositions) {
  Config c = small_config();
  c.positional_encoding = PositionalEncoding::Learned;
  c.max_positions = 4;
  test::TempDir dir;
  const Model m = random_model(c, dir.path);
  Encoder enc(m);
  EXPECT_THROW(enc.forward({{1, 50}}), InputError);
  EXPECT_THROW(enc.forward({{-1}}), InputError);
  EXPECT_THROW(enc.forward({{1, 2, 3, 4, 5}}), InputError);
  EXPECT_NO_THROW(enc.forward({{1, 2, 3, 4}}));
}

TEST(Init, SameSeedSameBytesAndNaturalScales) {
  Config c = small_config();
  c.vocab_size = 2000;
  c.d_model = 64;
  c.n_heads = 4;
  const auto a = random_weights(c, 42), b = random_weights(c, 42), other = random_weights(c, 43);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].bytes, b[i].bytes) << a[i].name;
  EXPECT_NE(a[0].bytes, other[0].bytes);

  // embedding ~ N(0, 1/d): sample standard deviation within 3% of 1/8
  const float* e = reinterpret_cast<const float*>(a[0].bytes.data());
  const size_t n = a[0].bytes.size() / 4;
  double sq = 0;
  for (size_t i = 0; i < n; ++i) sq += double(e[i]) * e[i];
  EXPECT_NEAR(std::sqrt(sq / n), 1.0 / 8.0, 0.03 / 8.0);
  // in_proj ~ U(−a, a), a = √(6 / (3d + d))
  const float* w = reinterpret_cast<const float*>(a[1].bytes.data());
  const double bound = std::sqrt(6.0 / (4.0 * 64));
  double maxabs = 0;
  for (size_t i = 0; i < a[1].bytes.size() / 4; ++i) maxabs = std::max(maxabs, double(std::fabs(w[i])));
  EXPECT_LE(maxabs, bound);
  EXPECT_GT(maxabs, 0.99 * bound);
}

TEST(Init, RngStreamIsFixed) {
  // SplitMix64 from seed 0: the published first outputs.
  Rng rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
}

// first_position: rope and alibi see only offsets i − j, so starting every sequence at another
// position changes nothing but rounding; the sinusoids' input is E·√d + PE(first + t) by the
// formula; a learned table must hold the shifted positions.
TEST(Encoder, FirstPositionMovesOnlyAbsolutePositions) {
  const std::vector<std::vector<int32_t>> ids = {{3, 1, 4, 1, 5, 9, 2}, {6, 5}};
  for (PositionalEncoding p : {PositionalEncoding::Rope, PositionalEncoding::Alibi, PositionalEncoding::AlibiSymmetric,
                               PositionalEncoding::T5Buckets}) {
    Config c = RandomEncoder::with(p);
    test::TempDir dir;
    const Model m = random_model(c, dir.path);
    Encoder enc(m);
    EncodeOptions shifted;
    shifted.first_position = 1000;
    const Hidden a = enc.forward(ids), b = enc.forward(ids, shifted);
    double worst = 0;
    for (size_t n = 0; n < a.data.size(); ++n) worst = std::max(worst, double(std::fabs(a.data[n] - b.data[n])));
    EXPECT_LT(worst, 2e-4) << to_string(p);  // float angles of large t·θ: rounding, not a preference
  }
  Config c = small_config();
  test::TempDir dir;
  const Model m = random_model(c, dir.path);
  Encoder enc(m);
  EncodeOptions options;
  options.first_position = 37;
  std::vector<float> input;
  options.observe = [&](const Stage& s) {
    if (s.kind == StageKind::Input) input.assign(s.data, s.data + size_t(s.rows) * s.stride);
  };
  enc.forward(ids, options);
  std::vector<double> pe(size_t(7) * c.d_model);
  reference::sinusoidal_positions(pe.data(), 7, c.d_model, c.pe_layout, c.pe_base, 37);
  for (int t = 0; t < 7; ++t)
    for (int j = 0; j < c.d_model; ++j) {
      const double want = m.weights().embedding[size_t(ids[0][t]) * c.d_model + j] * std::sqrt(double(c.d_model)) +
                          pe[size_t(t) * c.d_model + j];
      EXPECT_NEAR(input[size_t(t) * c.d_model + j], want, 1e-5) << t << "," << j;
    }
  Config l = small_config();
  l.positional_encoding = PositionalEncoding::Learned, l.max_positions = 10;
  test::TempDir dir2;
  const Model ml = random_model(l, dir2.path);
  Encoder el(ml);
  EncodeOptions past;
  past.first_position = 4;  // 7 tokens from 4 need rows up to 10: one past the table
  EXPECT_THROW(el.forward(ids, past), InputError);
  past.first_position = 3;
  EXPECT_NO_THROW(el.forward(ids, past));
}

}  // namespace
}  // namespace ordo
