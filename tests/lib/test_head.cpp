// The library's masked-language-model entries: logits at chosen rows, fill, pseudo-log-likelihood.
// On small random models with a head (every tensor random) and the default tokenizer, whose
// <mask> piece they use; the trained model's behaviour is tested through the command line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <ordo/ordo.h>

#include "engine/head.h"
#include "engine/init.h"
#include "engine/model.h"
#include "engine/reference.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

namespace fs = std::filesystem;
const std::string kTokenizer = std::string(ORDO_SOURCE_DIR) + "/models/default/tokenizer.model";

// A model directory: config with the head (or not), random tensors, the default tokenizer.
struct HeadModel {
  test::TempDir dir;
  explicit HeadModel(PositionalEncoding pe = PositionalEncoding::Sinusoidal, bool head = true, uint64_t seed = 11) {
    Config c = test::sized_config(8000, 16, 2, 32, 2);
    c.final_norm = true;
    c.positional_encoding = pe;
    c.max_positions = pe == PositionalEncoding::Learned ? 24 : 0;
    c.head = head ? Head::MaskedLM : Head::None;
    test::write_random_weights(c, dir.path, seed, /*head_bias_scale=*/2.0f);
    std::ofstream(dir.path + "/config.json") << config_to_json(c);
    fs::copy_file(kTokenizer, dir.path + "/tokenizer.model");
  }
};

double log_prob(const float* row, int V, int32_t id) {
  return double(row[id]) - log_sum_exp(row, V);
}

TEST(HeadApi, LogitsAtChosenRowsMatchThePlainModelInDouble) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  ASSERT_TRUE(p.has_head());
  const int V = p.config().vocab_size, d = p.config().d_model;
  const std::vector<std::vector<int32_t>> ids = {{261, 1267, 2462, 3, 261, 2048}, {261, 3, 7000}};
  const std::vector<Row> rows = {{0, 3}, {1, 1}, {0, 0}, {1, 2}};
  const std::vector<float> z = p.logits(ids, rows);
  ASSERT_EQ(z.size(), rows.size() * size_t(V));
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<double> h = reference::forward(p.model(), ids[rows[i].sequence]);
    std::vector<double> want(V);
    reference::mlm_logits(want.data(), h.data() + size_t(rows[i].position) * d, p.model().weights().embedding,
                          p.model().weights().head_bias, 1, V, d);
    double worst = 0;
    for (int v = 0; v < V; ++v)
      worst = std::max(worst, std::fabs(z[i * V + v] - want[v]) / std::max(1.0, std::fabs(want[v])));
    EXPECT_LT(worst, 2e-5) << "row " << i;
  }
}

TEST(HeadApi, TopKIsSortedSoftmax) {
  const float z[] = {0.0f, 2.0f, 1.0f, 2.0f, -1.0f};
  const auto top = top_k(z, 5, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // ties: the lower id first
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 2);
  const double sum = 1 + 2 * std::exp(2.0) + std::exp(1.0) + std::exp(-1.0);
  EXPECT_NEAR(top[0].second, std::exp(2.0) / sum, 1e-7);
  EXPECT_NEAR(top[2].second, std::exp(1.0) / sum, 1e-7);
  EXPECT_EQ(top_k(z, 5, 99).size(), 5u);
  EXPECT_TRUE(top_k(z, 5, 0).empty());
}

TEST(HeadApi, FillGivesEachMaskItsTopPieces) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  const Filled f = p.fill("the <mask> sat on the <mask>.", 4);
  ASSERT_EQ(f.masks.size(), 2u);
  const int V = p.config().vocab_size;
  const std::vector<float> z = p.logits({f.tokens.ids}, {{0, f.masks[0].position}, {0, f.masks[1].position}});
  for (size_t m = 0; m < 2; ++m) {
    EXPECT_EQ(f.tokens.ids[f.masks[m].position], p.mask_id());
    EXPECT_EQ(f.tokens.pieces[f.masks[m].position], "<mask>");
    ASSERT_EQ(f.masks[m].top.size(), 4u);
    const float* row = z.data() + m * V;
    const int32_t best = int32_t(std::max_element(row, row + V) - row);
    EXPECT_EQ(f.masks[m].top[0].id, best);
    for (size_t k = 0; k < 4; ++k) {
      const Guess& g = f.masks[m].top[k];
      EXPECT_EQ(g.piece, p.tokenizer().piece(g.id));
      EXPECT_NEAR(g.prob, std::exp(log_prob(row, V, g.id)), 1e-9);
      if (k > 0) {
        EXPECT_LE(g.prob, f.masks[m].top[k - 1].prob);
      }
    }
  }
  EXPECT_EQ(f.masks[1].position, int(f.tokens.ids.size()) - 2) << "the full stop follows the last mask";
}

// With positions, the same pieces with the mask elsewhere are a different question; without
// them the encoder sees the same bag of pieces, and the answer is the same to the last bit.
TEST(HeadApi, MovingTheMaskMattersOnlyWithPositions) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  const Filled a = p.fill("<mask> cat sat on the mat", 8), b = p.fill("cat sat on the mat <mask>", 8);
  double moved = 0;
  for (size_t k = 0; k < 8; ++k) moved = std::max(moved, std::fabs(a.masks[0].top[k].prob - b.masks[0].top[k].prob));
  EXPECT_GT(moved, 1e-4);
  const Filled an = p.fill("<mask> cat sat on the mat", 8, false), bn = p.fill("cat sat on the mat <mask>", 8, false);
  for (size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(an.masks[0].top[k].id, bn.masks[0].top[k].id);
    EXPECT_EQ(an.masks[0].top[k].prob, bn.masks[0].top[k].prob);
  }
}

TEST(HeadApi, FillNeedsAMarker) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  const std::string error = test::input_error([&] { p.fill("the cat sat", 5, true, "argument 1"); });
  EXPECT_EQ(error.rfind("argument 1: holds no <mask>", 0), 0u) << error;
}

// The batched PLL (the S masked copies as one batch) against S separate runs of one copy each.
TEST(HeadApi, PseudoLogLikelihoodEqualsSeparatePasses) {
  for (PositionalEncoding pe : {PositionalEncoding::Sinusoidal, PositionalEncoding::Learned}) {
    HeadModel hm(pe);
    Pipeline p(hm.dir.path);
    const int V = p.config().vocab_size;
    const Scored s = p.score(std::vector<std::string>{"the cat sat on the mat."})[0];
    const std::vector<int32_t>& ids = s.tokens.ids;
    ASSERT_EQ(s.log_probs.size(), ids.size());
    double sum = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      std::vector<int32_t> copy = ids;
      copy[t] = p.mask_id();
      const std::vector<float> z = p.logits({copy}, {{0, int(t)}});
      const double want = log_prob(z.data(), V, ids[t]);
      EXPECT_NEAR(s.log_probs[t], want, 1e-5 * std::max(1.0, std::fabs(want))) << "piece " << t;
      EXPECT_LT(s.log_probs[t], 0.0);
      sum += s.log_probs[t];
    }
    EXPECT_NEAR(s.pll, sum, 1e-9 * std::fabs(sum));
  }
}

TEST(HeadApi, PllOfManyTextsIsEachTextsOwn) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  const std::vector<std::string> texts = {"a dog ran", "", "the cat sat on the mat", "x"};
  const auto all = p.score(texts);
  ASSERT_EQ(all.size(), 4u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto one = p.score(std::vector<std::string>{texts[i]});
    EXPECT_EQ(all[i].pll, one[0].pll) << texts[i];
    EXPECT_EQ(all[i].tokens.pieces, one[0].tokens.pieces);
  }
  EXPECT_EQ(all[1].pll, 0.0);
  EXPECT_TRUE(all[1].log_probs.empty());
}

// Batches split past kPllBatchTokens give the same numbers as one batch.
TEST(HeadApi, LongTextSplitIntoSeveralBatches) {
  HeadModel hm;
  Pipeline p(hm.dir.path);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat and ";
  const Scored s = p.score(std::vector<std::string>{text})[0];
  const int L = int(s.tokens.ids.size());
  ASSERT_GT(L * L, Pipeline::kPllBatchTokens) << "the copies should not fit one batch";
  const int V = p.config().vocab_size;
  for (int t : {0, L / 2, L - 1}) {
    std::vector<int32_t> copy = s.tokens.ids;
    copy[t] = p.mask_id();
    const std::vector<float> z = p.logits({copy}, {{0, t}});
    EXPECT_NEAR(s.log_probs[t], log_prob(z.data(), V, s.tokens.ids[t]), 1e-4);
  }
}

// Without positions a reordering of the same pieces scores the same, exactly; and that number is
// the model's, not an artefact of the sorted order the library runs it in.
TEST(HeadApi, WithoutPositionsReorderingsTie) {
  for (PositionalEncoding pe : {PositionalEncoding::Sinusoidal, PositionalEncoding::None}) {
    HeadModel hm(pe);
    Pipeline p(hm.dir.path);
    const bool flag = pe != PositionalEncoding::None ? false : true;  // the ablation, or a model without PE
    const auto s = p.score(
        std::vector<std::string>{"the cat sat on the mat", "the mat sat on the cat", "mat the on sat cat the"}, flag);
    EXPECT_EQ(s[0].pll, s[1].pll);
    EXPECT_EQ(s[0].pll, s[2].pll);
    // The same log-probs, permuted with the pieces.
    std::vector<double> a = s[0].log_probs, b = s[2].log_probs;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);

    // The sequence in its own order through the encoder (no sorting), log p of each piece.
    const int V = p.config().vocab_size;
    const std::vector<int32_t>& ids = s[1].tokens.ids;
    double own = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      std::vector<int32_t> copy = ids;
      copy[t] = p.mask_id();
      EncodeOptions o;
      o.positions = flag;
      const std::vector<float> h = p.observe(copy, o);  // (S, d)
      std::vector<float> z(V);
      mlm_logits(z.data(), h.data() + t * size_t(p.config().d_model), 1, p.model());
      own += log_prob(z.data(), V, ids[t]);
    }
    EXPECT_NEAR(s[1].pll, own, 1e-5 * std::fabs(own));
  }
  // With positions the orders differ.
  HeadModel hm;
  Pipeline p(hm.dir.path);
  const auto s = p.score(std::vector<std::string>{"the cat sat on the mat", "the mat sat on the cat"});
  EXPECT_NE(s[0].pll, s[1].pll);
}

// The same at reduced precision, on the default model: the library runs each orderless text with
// its ids sorted, and each row is quantized (int8) or rounded (bf16) on its own, so a text and its
// permutations get the same pseudo-log-likelihood bit for bit.
TEST(HeadApi, WithoutPositionsReorderingsTieAtEveryComputeType) {
  Pipeline p(ORDO_DEFAULT_MODEL);
  for (ComputeType type : {ComputeType::F32, ComputeType::BF16, ComputeType::Int8}) {
    if (!compute_type_available(type)) continue;
    p.set_compute_type(type);
    const auto s =
        p.score(std::vector<std::string>{"the old dog slept by the warm fire", "the warm dog slept by the old fire",
                                         "fire the by slept dog warm old the"},
                false);
    EXPECT_EQ(s[0].pll, s[1].pll) << compute_type_name(type);
    EXPECT_EQ(s[0].pll, s[2].pll) << compute_type_name(type);
  }
}

TEST(HeadApi, ModelWithoutHeadIsRefusedByName) {
  HeadModel hm(PositionalEncoding::Sinusoidal, false);
  Pipeline p(hm.dir.path);
  EXPECT_FALSE(p.has_head());
  EXPECT_NO_THROW(p.encode(std::vector<std::string>{"the cat"}, Pooling::Mean))
      << "a model without a head works as before";
  for (int what = 0; what < 3; ++what) {
    const std::string error = test::input_error([&] {
      if (what == 0) p.fill("the <mask>");
      if (what == 1) p.score(std::vector<std::string>{"the cat"});
      if (what == 2) p.logits({{1, 2}}, {{0, 0}});
    });
    EXPECT_EQ(error.rfind(hm.dir.path + "/config.json: the model has no masked-language-model head", 0), 0u) << error;
  }
}

TEST(HeadApi, LearnedPositionsLimitIsAnInputError) {
  HeadModel hm(PositionalEncoding::Learned);
  Pipeline p(hm.dir.path);
  std::string text;
  for (int i = 0; i < 30; ++i) text += "cat ";
  EXPECT_THROW(p.score(std::vector<std::string>{text}), InputError);
  EXPECT_THROW(p.fill(text + "<mask>"), InputError);
}

}  // namespace
}  // namespace ordo
