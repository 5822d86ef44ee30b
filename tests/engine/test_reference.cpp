// ordo against PyTorch: every case under tests/data (written by tests/data/make_reference.py) holds a
// model, input ids and nn.TransformerEncoder's float32 output for them. Each case runs as one
// padded batch and sequence by sequence, and through the plain encoder; every hidden state must satisfy
//   max |ordo − torch| ≤ 2e-5 · max(1, max |torch|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/engine/safetensors.h>

#include "engine/reference.h"
#include "paths.h"

namespace ordo {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(ORDO_SOURCE_DIR) / "tests" / "data";

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  if (fs::is_directory(kData))
    for (const auto& entry : fs::directory_iterator(kData))
      if (fs::exists(entry.path() / "reference.safetensors")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct Reference {
  std::vector<std::vector<int32_t>> ids;   // (B, L_b)
  std::vector<std::vector<float>> hidden;  // (B, L_b · d)
};

Reference load_reference(const fs::path& path, int d) {
  const SafeTensors file(path.string());
  Reference r;
  for (int b = 0;; ++b) {
    const TensorInfo* ids = file.find("ids." + std::to_string(b));
    const TensorInfo* hidden = file.find("hidden." + std::to_string(b));
    if (!ids) break;
    EXPECT_TRUE(hidden && ids->dtype == "I32" && hidden->dtype == "F32") << path << " sequence " << b;
    if (!hidden) break;
    EXPECT_EQ(hidden->elements, ids->elements * uint64_t(d)) << path << " sequence " << b;
    r.ids.emplace_back(ids->elements);
    std::memcpy(r.ids.back().data(), ids->data, ids->elements * sizeof(int32_t));
    r.hidden.emplace_back(hidden->elements);
    std::memcpy(r.hidden.back().data(), hidden->data, hidden->elements * sizeof(float));
  }
  return r;
}

// max |a − b| over sequence b of `h` against PyTorch's rows `expected` (L, d).
double max_diff(const Hidden& h, int b, const std::vector<float>& expected) {
  double worst = 0;
  for (int t = 0; t < h.lengths[b]; ++t)
    for (int j = 0; j < h.d; ++j)
      worst = std::max(worst, std::fabs(double(h.row(b, t)[j]) - expected[size_t(t) * h.d + j]));
  return worst;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(double(x)));
  return m;
}

// One case: its model and PyTorch's ids and outputs.
class PyTorchReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const fs::path dir = kData / GetParam();
    model = std::make_unique<Model>(Model::load(dir.string()));
    ref = load_reference(dir / "reference.safetensors", model->config().d_model);
    ASSERT_FALSE(ref.ids.empty()) << dir << " holds no sequences";
  }
  std::unique_ptr<Model> model;
  Reference ref;
};

TEST_P(PyTorchReference, HiddenStatesMatch) {
  Encoder encoder(*model);
  const Hidden batch = encoder.forward(ref.ids);
  double worst_batch = 0, worst_alone = 0;
  for (size_t b = 0; b < ref.ids.size(); ++b) {
    const double bar = 2e-5 * std::max(1.0, max_abs(ref.hidden[b]));
    const double in_batch = max_diff(batch, int(b), ref.hidden[b]);
    EXPECT_LE(in_batch, bar) << GetParam() << ": sequence " << b << " of " << ref.ids[b].size()
                             << " tokens, run in the padded batch";
    const Hidden alone = encoder.forward({ref.ids[b]});
    const double by_itself = max_diff(alone, 0, ref.hidden[b]);
    EXPECT_LE(by_itself, bar) << GetParam() << ": sequence " << b << " of " << ref.ids[b].size()
                              << " tokens, run alone";
    worst_batch = std::max(worst_batch, in_batch);
    worst_alone = std::max(worst_alone, by_itself);
  }
  std::cout << "[ torch    ] " << GetParam() << ": max |ordo - torch| " << worst_batch << " (batch of "
            << ref.ids.size() << "), " << worst_alone << " (one at a time)\n";
  RecordProperty("max_abs_diff_batch", std::to_string(worst_batch));
  RecordProperty("max_abs_diff_alone", std::to_string(worst_alone));
}

// The plain encoder (engine/reference.h) meets the same bar, sequence by sequence.
TEST_P(PyTorchReference, PlainEncoderMatches) {
  double worst = 0;
  for (size_t b = 0; b < ref.ids.size(); ++b) {
    const std::vector<double> plain = reference::forward(*model, ref.ids[b]);
    ASSERT_EQ(plain.size(), ref.hidden[b].size());
    double diff = 0;
    for (size_t i = 0; i < plain.size(); ++i) diff = std::max(diff, std::fabs(plain[i] - ref.hidden[b][i]));
    EXPECT_LE(diff, 2e-5 * std::max(1.0, max_abs(ref.hidden[b]))) << GetParam() << ": sequence " << b;
    worst = std::max(worst, diff);
  }
  std::cout << "[ torch    ] " << GetParam() << ": max |plain - torch| " << worst << "\n";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, PyTorchReference, ::testing::ValuesIn(case_names()), test_name);

// The suite above passes vacuously if the data went missing; this does not.
TEST(PyTorchReferenceData, CasesArePresent) {
  EXPECT_GE(case_names().size(), 12u) << kData;
}

// The relative schemes see only i − j: shifting every position by k changes no score. RoPE: q'_t·k'_s
// for positions from 0 and from k; ALiBi: the bias −m·|i − j| is the same for any shift by definition,
// so its check is the slopes, the paper's geometric sequence.
TEST(Reference, RopeScoresDependOnlyOnTheDistance) {
  const int S = 12, dh = 16;
  std::vector<double> q(size_t(S) * dh), k(size_t(S) * dh);
  for (size_t n = 0; n < q.size(); ++n) q[n] = std::sin(0.7 * n + 1), k[n] = std::cos(1.3 * n);
  auto scores = [&](int first) {
    std::vector<double> a(q), b(k), s(size_t(S) * S);
    reference::rope(a.data(), S, dh, 1, dh, 10000.0, first);
    reference::rope(b.data(), S, dh, 1, dh, 10000.0, first);
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j)
        for (int e = 0; e < dh; ++e) s[size_t(i) * S + j] += a[size_t(i) * dh + e] * b[size_t(j) * dh + e];
    return s;
  };
  const auto s0 = scores(0);
  for (int first : {1, 7, 500}) {
    const auto s1 = scores(first);
    for (size_t n = 0; n < s0.size(); ++n) EXPECT_NEAR(s1[n], s0[n], 1e-9 * std::max(1.0, std::fabs(s0[n])));
  }
  // and without the rotation the same rows at other positions would give other scores: the check can fail
  std::vector<double> a(q);
  reference::rope(a.data(), S, dh, 1, dh, 10000.0, 0);
  EXPECT_GT(std::fabs(a[dh] - q[dh]), 1e-3);  // row 1 was turned
}

TEST(Reference, AlibiSlopes) {
  EXPECT_EQ(reference::alibi_slopes(4), (std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625}));
  EXPECT_EQ(reference::alibi_slopes(1), (std::vector<double>{1.0 / 256}));
  // 6 heads: the four of h = 4, then slopes 1 and 3 of h = 8 (2^-1, 2^-3), as Press et al.'s code
  EXPECT_EQ(reference::alibi_slopes(6), (std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125}));
}

// ALiBi's heads in pairs: the even head sees back with the pair's slope (∞ ahead: no weight), the odd
// one ahead with the same slope; the symmetric scheme has m_h both ways; other encodings no bias.
TEST(Reference, AlibiHeadSlopes) {
  const double m[] = {0.25, 0.0625, 0.015625, 0.00390625}, inf = std::numeric_limits<double>::infinity();
  const std::pair<double, double> pairs[] = {{0.25, inf}, {inf, 0.25}, {0.015625, inf}, {inf, 0.015625}};
  for (int head = 0; head < 4; ++head) {
    const auto two = reference::alibi_head_slopes(PositionalEncoding::Alibi, 4, head);
    EXPECT_EQ(two.before, pairs[head].first) << head;
    EXPECT_EQ(two.after, pairs[head].second) << head;
    const auto one = reference::alibi_head_slopes(PositionalEncoding::AlibiSymmetric, 4, head);
    EXPECT_EQ(one.before, m[head]);
    EXPECT_EQ(one.after, m[head]);
  }
  // 3 heads: slopes 2^-4, 2^-8, 2^-2; a pair with 2^-4, and the last head looking back alone with 2^-2
  const auto h1 = reference::alibi_head_slopes(PositionalEncoding::Alibi, 3, 1);
  const auto h2 = reference::alibi_head_slopes(PositionalEncoding::Alibi, 3, 2);
  EXPECT_EQ(h1.before, inf);
  EXPECT_EQ(h1.after, 0.0625);
  EXPECT_EQ(h2.before, 0.25);
  EXPECT_EQ(h2.after, inf);
  // Slopes given (config.json's alibi_slopes): each head its own, on the side(s) it sees.
  const std::vector<double> given = {0.25, 0.25, 0.0625, 0.0625, 0.015625, 0.015625, 0.00390625, 0.00390625};
  for (int head = 0; head < 8; ++head) {
    const auto two = reference::alibi_head_slopes(PositionalEncoding::Alibi, 8, head, given);
    EXPECT_EQ(two.before, head % 2 == 0 ? given[head] : inf) << head;
    EXPECT_EQ(two.after, head % 2 == 1 ? given[head] : inf) << head;
    const auto one = reference::alibi_head_slopes(PositionalEncoding::AlibiSymmetric, 8, head, given);
    EXPECT_EQ(one.before, given[head]);
    EXPECT_EQ(one.after, given[head]);
  }
  const auto none = reference::alibi_head_slopes(PositionalEncoding::Rope, 4, 0);
  EXPECT_EQ(none.before, 0.0);
  EXPECT_EQ(none.after, 0.0);
}

// T5's buckets by hand. 32 buckets: 16 a side, distances 0..7 exact, 8 log-spaced buckets after.
// To distance 32 (ordo's): bucket 8 + ⌊8·ln(n/8)/ln 4⌋ = 8 + ⌊4·log2(n/8)⌋: n = 8, 9 → 8; 10 → 9
// (4·log2 1.25 = 1.29); 16 → 12 (exactly 4: the whole-number case); 26 → 14 (6.80); 27 → 15 (7.02);
// 32 and anything past it → 15 (8 and more, held to the side's last bucket). To distance 128 (T5's):
// 8 + ⌊2·log2(n/8)⌋: 16 → 10, 32 → 12, 64 → 14, 90 → 14 (6.98), 127 → 15 (7.98), 128 and past → 15.
// A key after the query (j − i > 0) adds 16; j − i = 0 is the query itself, bucket 0.
// The gated feed-forward layer (T5's "gated-gelu", here with ReLU to keep the hand arithmetic exact):
// FFN(x) = (act(x·W1ᵀ) ⊙ x·Vᵀ)·W2ᵀ, d = 2, F = 2, no biases. x = (1, 2):
//   x·W1ᵀ = (1·1 + 2·0, 1·(−1) + 2·1) = (1, 1), ReLU (1, 1); x·Vᵀ = (1·2 + 2·1, 1·0 + 2·(−1)) = (4, −2)
//   product (4, −2); ·W2ᵀ = (4·1 + (−2)·3, 4·0.5 + (−2)·0) = (−2, 2)
// and the same layer ungated: (1, 1)·W2ᵀ = (4, 0.5).
TEST(Reference, GatedFeedForwardByHand) {
  const float w1[] = {1, 0, -1, 1}, v[] = {2, 1, 0, -1}, w2[] = {1, 3, 0.5f, 0};
  LayerWeights w;
  w.linear1_weight = w1, w.linear1_v_weight = v, w.linear2_weight = w2;
  const double x[] = {1, 2};
  double out[2];
  reference::feed_forward(out, x, w, 1, 2, 2, Activation::ReLU);
  EXPECT_EQ(out[0], -2.0);
  EXPECT_EQ(out[1], 2.0);
  w.linear1_v_weight = nullptr;
  reference::feed_forward(out, x, w, 1, 2, 2, Activation::ReLU);
  EXPECT_EQ(out[0], 4.0);
  EXPECT_EQ(out[1], 0.5);
  // GELU-tanh gated, against the formula in double: act(1)·4 and act(1)·(−2), then W2
  w.linear1_v_weight = v;
  reference::feed_forward(out, x, w, 1, 2, 2, Activation::GELUTanh);
  const double g = 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715)));  // GELUTanh(1)
  EXPECT_NEAR(out[0], g * 4 * 1 + g * -2 * 3, 1e-15);
  EXPECT_NEAR(out[1], g * 4 * 0.5, 1e-15);
}

TEST(Reference, T5BucketsByHand) {
  const std::pair<int, int> to32[] = {{0, 0},   {1, 1},   {7, 7},   {8, 8},   {9, 8},   {10, 9},  {15, 11},  {16, 12},
                                      {26, 14}, {27, 15}, {31, 15}, {32, 15}, {33, 15}, {96, 15}, {1000, 15}};
  for (const auto& [n, bucket] : to32) {
    EXPECT_EQ(reference::relative_bucket(-n, 32, 32), bucket) << "key " << n << " before the query";
    if (n > 0) {
      EXPECT_EQ(reference::relative_bucket(n, 32, 32), 16 + bucket) << "key " << n << " after it";
    }
  }
  const std::pair<int, int> to128[] = {{7, 7},   {8, 8},   {11, 8},   {12, 9},   {16, 10},  {32, 12},
                                       {64, 14}, {90, 14}, {127, 15}, {128, 15}, {129, 15}, {5000, 15}};
  for (const auto& [n, bucket] : to128) {
    EXPECT_EQ(reference::relative_bucket(-n, 32, 128), bucket) << n;
    EXPECT_EQ(reference::relative_bucket(n, 32, 128), 16 + bucket) << n;
  }
  // 8 buckets to distance 5: 4 a side, distances 0, 1 exact, then 2 + ⌊2·ln(n/2)/ln 2.5⌋ held to 3:
  // n = 2 → 2, 3 → 2 (0.88), 4 → 3 (1.51), 5 and past → 3
  const int eight[] = {0, 1, 2, 2, 3, 3, 3, 3};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(reference::relative_bucket(-n, 8, 5), eight[n]) << n;
    if (n > 0) {
      EXPECT_EQ(reference::relative_bucket(n, 8, 5), 4 + eight[n]) << n;
    }
  }
}

// Against the formula in float64, written here from the paper's description: every offset to ±300
// for several sizes, each bucket in range and the buckets of a side never decreasing with distance.
TEST(Reference, T5BucketsFollowTheFormula) {
  for (const auto& [buckets, distance] : {std::pair<int, int>{32, 32}, {32, 128}, {16, 10}, {64, 50}, {8, 3}}) {
    const int half = buckets / 2, exact = half / 2;
    int last_before = 0, last_after = half;
    for (int n = 0; n <= 300; ++n) {
      double b = n;
      if (n >= exact) {
        const double frac =
            std::log(double(n) / exact) / std::log(double(distance) / exact);  // 0 at exact, 1 at distance
        b = std::min<double>(half - 1, exact + std::floor(frac * (half - exact) + 1e-9));
      }
      const int before = reference::relative_bucket(-n, buckets, distance);
      EXPECT_EQ(before, int(b)) << buckets << "/" << distance << ", n " << n;
      if (n > 0) {
        EXPECT_EQ(reference::relative_bucket(n, buckets, distance), half + int(b)) << n;
      }
      EXPECT_GE(before, last_before);
      EXPECT_LT(before, half);
      last_before = before;
      if (n > 0) {
        const int after = reference::relative_bucket(n, buckets, distance);
        EXPECT_GE(after, last_after);
        EXPECT_LT(after, buckets);
        last_after = after;
      }
    }
    EXPECT_EQ(last_before, half - 1) << "past max_distance: the side's last bucket";
    EXPECT_EQ(last_after, buckets - 1);
  }
}

}  // namespace
}  // namespace ordo
