// The library's view of heads across texts (ordo/heads.h) and head masking through the Pipeline:
// on a small random model, against the plain encoder of engine/reference.h in double.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <ordo/heads.h>
#include <ordo/ordo.h>

#include "engine/model.h"
#include "engine/reference.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

namespace fs = std::filesystem;

struct SmallModel {
  test::TempDir dir;
  explicit SmallModel(PositionalEncoding pe) {
    Config c = test::sized_config(8000, 16, 2, 32, 2);
    c.final_norm = true;
    c.positional_encoding = pe;
    c.head = Head::MaskedLM;
    test::write_random_weights(c, dir.path, 5, /*head_bias_scale=*/2.0f);
    std::ofstream(dir.path + "/config.json") << config_to_json(c);
    fs::copy_file(std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model", dir.path + "/tokenizer.model");
  }
};

// Every head's weights of one text from the plain encoder: (layers, heads, S, S).
std::vector<double> plain_weights(const Model& m, const std::vector<int32_t>& ids,
                                  const std::vector<HeadIndex>& masked = {}) {
  const Config& c = m.config();
  const size_t S = ids.size();
  std::vector<double> A(size_t(c.n_layers) * c.n_heads * S * S);
  reference::Watch watch([&](StageKind kind, int layer, int head, const double* data, int rows, int cols, int stride) {
    if (kind != StageKind::AttentionWeights) return;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) A[((size_t(layer) * c.n_heads + head) * S + i) * S + j] = data[i * stride + j];
  });
  reference::forward(m, ids, true, masked);
  return A;
}

// mean and most by hand: for each head, bucket and offset, the rows that have the key, their weight
// on it and whether it is their largest, from the plain encoder's tables.
TEST(HeadsByDistance, MatchesThePlainEncoderAveragedByHand) {
  for (PositionalEncoding pe : {PositionalEncoding::Sinusoidal, PositionalEncoding::Rope}) {
    SmallModel sm(pe);
    Pipeline p(sm.dir.path);
    const std::vector<std::string> lines = {"the cat sat on the mat", "a dog", "",
                                            "she said that it was a truth universally acknowledged"};
    std::vector<Tokenization> toks;
    for (const auto& l : lines) toks.push_back(p.tokenize(l));
    const int K = 3;
    const std::vector<int> starts = {0, 4};
    const HeadsByDistance r = heads_by_distance(p, toks, K, starts);
    const Config& c = p.config();
    EXPECT_EQ(r.texts, 3);  // the empty line is not a text
    ASSERT_EQ(r.buckets(), 2);
    for (int l = 0; l < c.n_layers; ++l)
      for (int h = 0; h < c.n_heads; ++h)
        for (int b = 0; b < 2; ++b)
          for (int o = -K; o <= K; ++o) {
            double sum = 0;
            long rows = 0, most = 0;
            for (const Tokenization& t : toks) {
              const int S = int(t.ids.size());
              if (S == 0) continue;
              const std::vector<double> A = plain_weights(p.model(), t.ids);
              for (int i = 0; i < S; ++i) {
                const int j = i + o;
                if (j < 0 || j >= S || (i >= 4) != (b == 1)) continue;
                const double* row = A.data() + ((size_t(l) * c.n_heads + h) * S + i) * S;
                int best = 0;
                for (int k = 1; k < S; ++k)
                  if (row[k] > row[best]) best = k;
                sum += row[j], ++rows, most += best == j;
              }
            }
            ASSERT_EQ(r.n(b, o), uint64_t(rows)) << "bucket " << b << ", offset " << o;
            if (rows == 0) {
              EXPECT_TRUE(std::isnan(r.mean(l, h, b, o)));
              continue;
            }
            EXPECT_NEAR(r.mean(l, h, b, o), sum / rows, 1e-5) << l << "," << h << " bucket " << b << " offset " << o;
            EXPECT_NEAR(r.most(l, h, b, o), double(most) / rows, 1e-12)
                << l << "," << h << " bucket " << b << " offset " << o;
          }
  }
}

TEST(HeadsByDistance, RefusesBadBuckets) {
  SmallModel sm(PositionalEncoding::Sinusoidal);
  Pipeline p(sm.dir.path);
  const std::vector<Tokenization> toks = {p.tokenize("a b c")};
  EXPECT_THROW(heads_by_distance(p, toks, -1), std::invalid_argument);
  EXPECT_THROW(heads_by_distance(p, toks, 2, {1}), std::invalid_argument);
  EXPECT_THROW(heads_by_distance(p, toks, 2, {0, 5, 5}), std::invalid_argument);
}

// Masked heads reach the head's logits: the Pipeline's logits with heads off equal the plain
// encoder's with the same heads off, and differ from those with every head on.
TEST(MaskedHeads, ThePipelinesLogitsMatchThePlainEncoder) {
  SmallModel sm(PositionalEncoding::Alibi);
  Pipeline p(sm.dir.path);
  const Config& c = p.config();
  const Tokenization t = p.tokenize("the cat sat on the mat");
  const int S = int(t.ids.size()), V = c.vocab_size, d = c.d_model;
  std::vector<Row> rows;
  for (int i = 0; i < S; ++i) rows.push_back({0, i});
  for (const std::vector<HeadIndex>& masked :
       std::vector<std::vector<HeadIndex>>{{}, {{0, 0}}, {{1, 1}}, {{0, 1}, {1, 0}}}) {
    p.set_masked_heads(masked);
    const std::vector<float> got = p.logits({t.ids}, rows);
    const std::vector<double> h = reference::forward(p.model(), t.ids, true, masked);
    std::vector<double> want(size_t(S) * V);
    reference::mlm_logits(want.data(), h.data(), p.model().weights().embedding, p.model().weights().head_bias, S, V, d);
    double worst = 0, moved = 0;
    const std::vector<double> all_on = reference::forward(p.model(), t.ids);
    for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(got[k] - want[k]));
    for (size_t k = 0; k < h.size(); ++k) moved = std::max(moved, std::fabs(h[k] - all_on[k]));
    EXPECT_LT(worst, 2e-4) << masked.size() << " heads off";
    if (!masked.empty()) {
      EXPECT_GT(moved, 1e-3) << "masking changed nothing";
    }
  }
  p.set_masked_heads({});
}

}  // namespace
}  // namespace ordo
