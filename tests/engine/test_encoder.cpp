// The encoder: against the plain encoder in double (engine/reference.h), the word-order
// properties, batching, and the seeded initialiser.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <ordo/engine/encoder.h>
#include <ordo/errors.h>

#include "engine/init.h"
#include "engine/reference.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::max_abs_diff;

Config small_config() {
  Config c;
  c.vocab_size = 50;
  c.d_model = 12;
  c.n_heads = 3;
  c.d_ff = 20;
  c.n_layers = 2;
  return c;
}

// A model whose every tensor is random, biases and LayerNorm parameters included, so that a
// wrong wire shows.
Model random_model(const Config& c, const std::string& dir, uint64_t seed = 1) {
  std::vector<TensorBytes> tensors;
  uint64_t s = seed;
  for (const TensorSpec& spec : expected_tensors(c)) {
    uint64_t n = 1;
    for (uint64_t k : spec.shape) n *= k;
    auto v = test::random_floats(n, ++s * 7919, 0.5f);
    if (spec.name.find("norm") != std::string::npos && spec.name.find(".weight") != std::string::npos)
      for (float& x : v) x += 1.0f;
    tensors.push_back(f32_tensor(spec.name, spec.shape, v));
  }
  write_safetensors(dir + "/model.safetensors", tensors);
  return Model(c, dir + "/model.safetensors");
}

// max |h − ref| over sequence b's rows; ref (L, d) from reference::forward.
double diff_to_reference(const Hidden& h, int b, const std::vector<double>& ref) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(h.row(b, int(i / h.d))[i % h.d] - ref[i]));
  return worst;
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

}  // namespace
}  // namespace ordo
