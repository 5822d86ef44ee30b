// <ordo/eval.h>: the evaluation rule, step by step. The expected draws were computed with the Python
// reference, tools/train/evaluate.py (its SplitMix64, mask_positions, shuffled and swapped), for the
// ids and line numbers below; the counts and ranks by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include <ordo/eval.h>

#include "engine/init.h"
#include "paths.h"

namespace ordo {
namespace {

using Ids = std::vector<int32_t>;

Ids range(int32_t from, int n) {
  Ids v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(EvalRule, GeneratorIsSplitMix64) {
  Rng zero(0);  // the published first output of SplitMix64 from seed 0
  EXPECT_EQ(zero.next(), 0xe220a8397b1dcdafull);
  Rng r(eval::kSeed);  // line 0's first three draws, as evaluate.py's SplitMix64 gives them
  EXPECT_EQ(r.next(), 17462441621469506309ull);
  EXPECT_EQ(r.next(), 14349248600832693881ull);
  EXPECT_EQ(r.next(), 10663058410636140827ull);
}

TEST(EvalRule, MaskedCountIsFifteenPercentRoundedHalfUpAtLeastOne) {
  // By hand: 0.15·L + 0.5, floored.
  const std::pair<int, int> cases[] = {{1, 1},   {2, 1},   {4, 1},   {6, 1},    {7, 1},   {9, 1},  {10, 2},
                                       {13, 2},  {14, 2},  {16, 2},  {17, 3},   {20, 3},  {30, 5}, {50, 8},
                                       {64, 10}, {70, 11}, {90, 14}, {110, 17}, {128, 19}};
  for (auto [L, k] : cases) EXPECT_EQ(eval::masked_count(L), k) << "L = " << L;
}

struct Expected {
  uint64_t line;
  Ids ids;
  std::vector<int> masked;  // in the order drawn
  Ids shuffled, swapped;    // empty: left out
};

TEST(EvalRule, SameDrawsAsThePythonReference) {
  const Expected cases[] = {
      {0, {100}, {0}, {}, {}},
      {3, range(11, 7), {5}, {16, 13, 11, 15, 12, 17, 14}, {11, 12, 13, 14, 15, 17, 16}},
      {41,
       range(300, 13),
       {12, 6},
       {300, 305, 306, 302, 312, 301, 308, 309, 307, 304, 303, 310, 311},
       {300, 301, 302, 304, 303, 305, 306, 307, 308, 309, 310, 311, 312}},
      {100,
       {7, 8, 7, 8, 9, 9, 10, 11, 12, 7, 8, 13, 14, 15, 16, 17, 18, 19, 20, 21},
       {12, 0, 4},
       {7, 13, 7, 9, 21, 11, 8, 16, 8, 18, 10, 17, 9, 20, 7, 15, 14, 8, 12, 19},
       {7, 8, 7, 8, 9, 9, 10, 11, 12, 7, 13, 8, 14, 15, 16, 17, 18, 19, 20, 21}},
      {3628, range(20, 10), {2, 0}, {27, 28, 25, 29, 22, 24, 20, 23, 21, 26}, {20, 21, 23, 22, 24, 25, 26, 27, 28, 29}},
      // 64 pieces: masked only (the order test takes 5..20).
      {2, range(400, 64), {52, 41, 27, 35, 51, 59, 37, 30, 2, 19}, {}, {}},
      // Every piece the same: 100 shuffles give back the same ids, and no adjacent pair differs.
      {5, {9, 9, 9, 9, 9, 9}, {1}, {}, {}},
      // The first four shuffles give back the same ids; the fifth does not.
      {22, {5, 5, 5, 5, 6}, {4}, {6, 5, 5, 5, 5}, {5, 5, 5, 6, 5}},
      // One shuffle given back, and the swap's draw comes after the second shuffle's.
      {141, {5, 5, 5, 6, 7}, {2}, {5, 6, 5, 5, 7}, {5, 5, 6, 5, 7}},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE("line " + std::to_string(e.line));
    const eval::LinePlan p = eval::plan(e.ids, e.line);
    EXPECT_EQ(p.masked, e.masked);
    EXPECT_EQ(p.order, e.ids.size() >= 5 && e.ids.size() <= 20);
    EXPECT_EQ(p.shuffled, e.shuffled);
    EXPECT_EQ(p.swapped, e.swapped);
  }
}

TEST(EvalRule, StepsCompose) {
  // plan() is mask_positions, then shuffled, then swapped, on one generator.
  const Ids ids = {4, 8, 15, 16, 23, 42, 4, 8};
  Rng rng(eval::kSeed + 77);
  const auto masked = eval::mask_positions(int(ids.size()), rng);
  const auto sh = eval::shuffled(ids, rng);
  const auto sw = eval::swapped(ids, rng);
  const eval::LinePlan p = eval::plan(ids, 77);
  EXPECT_EQ(p.masked, masked);
  EXPECT_EQ(p.shuffled, sh);
  EXPECT_EQ(p.swapped, sw);
  // What they must be whatever the draws: distinct positions in range; a permutation of the pieces
  // other than the natural order; exactly one adjacent pair exchanged.
  std::vector<int> m = masked;
  std::sort(m.begin(), m.end());
  EXPECT_EQ(std::adjacent_find(m.begin(), m.end()), m.end());
  EXPECT_GE(m.front(), 0);
  EXPECT_LT(m.back(), int(ids.size()));
  Ids a = ids, b = sh;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_NE(sh, ids);
  int changed = 0, at = -1;
  for (size_t t = 0; t < ids.size(); ++t)
    if (sw[t] != ids[t]) ++changed, at = at < 0 ? int(t) : at;
  ASSERT_EQ(changed, 2);
  EXPECT_EQ(sw[at], ids[at + 1]);
  EXPECT_EQ(sw[at + 1], ids[at]);
}

TEST(EvalRule, EmptyLineHasNothingToMask) {
  const eval::LinePlan p = eval::plan({}, 0);
  EXPECT_TRUE(p.masked.empty());
  EXPECT_FALSE(p.order);
}

TEST(EvalRule, RankCountsHigherLogitsAndTiesGoToTheLowerId) {
  const float z[] = {0.5f, 2.0f, -1.0f, 2.0f, 3.0f, 0.5f, 1.0f};
  EXPECT_EQ(eval::rank_of(z, 7, 4), 0);  // the largest
  EXPECT_EQ(eval::rank_of(z, 7, 1), 1);  // 3.0 above it; 2.0 at id 3 ties and comes after
  EXPECT_EQ(eval::rank_of(z, 7, 3), 2);  // 3.0, and the tie at the lower id 1
  EXPECT_EQ(eval::rank_of(z, 7, 6), 3);
  EXPECT_EQ(eval::rank_of(z, 7, 0), 4);
  EXPECT_EQ(eval::rank_of(z, 7, 5), 5);  // a top-5 miss: 0.5 at id 0 ties and comes first
  EXPECT_EQ(eval::rank_of(z, 7, 2), 6);
}

TEST(EvalRule, PllSumDoesNotDependOnTheOrderOfItsTerms) {
  // Summed left to right, (-0.1 + -0.2) + -0.3 and (-0.3 + -0.2) + -0.1 are different doubles.
  const std::vector<double> a = {-0.1, -0.2, -0.3}, b = {-0.3, -0.2, -0.1};
  double left_a = 0, left_b = 0;
  for (double v : a) left_a += v;
  for (double v : b) left_b += v;
  EXPECT_NE(left_a, left_b) << "the example should show the problem a fixed order solves";
  EXPECT_EQ(eval::pll_sum(a), eval::pll_sum(b));
  EXPECT_EQ(eval::pll_sum(a), -0.6);  // ascending: (-0.3 + -0.2) + -0.1
}

// ---- On the committed models (models/default, models/position-learned, models/position-none) ----

// A tie is equality within float32 rounding: |a - b| <= 1e-5 (|a| + |b|), so that a pair equal in exact
// arithmetic is a tie on every CPU, not a win decided by the last bits of two sums.
TEST(EvalRule, OrderTiesAreEqualWithinFloatRounding) {
  EXPECT_EQ(eval::order_verdict(-40.0, -40.0), 0);
  EXPECT_EQ(eval::order_verdict(0.0, 0.0), 0);
  EXPECT_EQ(eval::order_verdict(-40.0, -40.0 - 7e-4), 0);  // 7e-4 <= 1e-5 * 80.0007
  EXPECT_EQ(eval::order_verdict(-40.0 - 7e-4, -40.0), 0);
  EXPECT_EQ(eval::order_verdict(-40.0, -40.0 - 9e-4), 1);  // 9e-4 > 8.0009e-4
  EXPECT_EQ(eval::order_verdict(-40.0 - 9e-4, -40.0), -1);
  EXPECT_EQ(eval::order_verdict(-30.0, -36.0), 1);
}

namespace trained {

const std::string kDir = std::string(ORDO_SOURCE_DIR) + "/models/";

std::vector<std::string> read_lines(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; out.size() < n && std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::vector<int32_t>> ids_of(const Pipeline& p, const std::vector<std::string>& texts) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& t : texts) out.push_back(p.tokenizer().encode(t).ids);
  return out;
}

// Sentences written for this test (not from WordNet), each with the same words in another order.
const std::pair<const char*, const char*> kReordered[] = {
    {"the children planted tomatoes behind the school", "behind the children school the planted tomatoes"},
    {"she poured hot coffee into a blue cup", "into coffee she cup blue a poured hot"},
    {"my brother repairs old bicycles in his garage", "old my repairs brother bicycles garage his in"},
    {"a small boat drifted slowly toward the harbor", "toward a drifted small harbor boat slowly the"},
    {"the baker sells fresh bread every morning", "bread the every sells morning fresh baker"},
    {"rain fell on the quiet village all night", "night the all fell village on quiet rain"},
    {"we walked along the river after dinner", "river along we dinner the after walked"},
    {"two dogs chased a red ball across the park", "ball across two the chased red park dogs a"},
    {"he forgot his umbrella at the station", "station umbrella the he at his forgot"},
    {"a cold wind blew through the open window", "through window a open blew the wind cold"},
    {"the museum closes early on sundays", "the museum closes on early sundays"},  // one adjacent swap
    {"my sister wants to eat a sandwich", "my sister wants eat to a sandwich"},    // one adjacent swap
};

// PLL(natural) − PLL(reordered) for each pair, the pair scored as one set.
std::vector<double> differences(const std::string& model, bool positions = true) {
  Pipeline p(kDir + model);
  std::vector<std::vector<std::vector<int32_t>>> sets;
  for (const auto& [a, b] : kReordered) {
    std::vector<int32_t> x = p.tokenizer().encode(a).ids, y = p.tokenizer().encode(b).ids;
    std::vector<int32_t> sx = x, sy = y;
    std::sort(sx.begin(), sx.end());
    std::sort(sy.begin(), sy.end());
    EXPECT_EQ(sx, sy) << "not the same pieces reordered: " << a << " / " << b;
    EXPECT_NE(x, y) << a;
    sets.push_back({x, y});
  }
  const auto s = eval::pseudo_log_likelihoods(p, sets, positions);
  std::vector<double> d;
  for (const auto& pair : s) d.push_back(pair[0] - pair[1]);
  return d;
}

TEST(EvalTrained, WithoutPositionsReorderedSentencesTieExactly) {
  for (double d : differences("position-none")) EXPECT_EQ(d, 0.0);   // bit for bit, not to a tolerance
  for (double d : differences("default", false)) EXPECT_EQ(d, 0.0);  // positions switched off: the same
}

TEST(EvalTrained, WithPositionsNaturalOrderIsPreferredOnMostSentences) {
  const int n = int(std::size(kReordered));
  for (const char* model : {"default", "position-learned"}) {
    const auto d = differences(model);
    int preferred = 0;
    std::string scores;
    for (double v : d) preferred += v > 0, scores += " " + std::to_string(v);
    EXPECT_GE(preferred, n - 2) << model << ": PLL(natural) - PLL(reordered):" << scores;
  }
}

TEST(EvalTrained, BatchingDoesNotChangeTheCounts) {
  Pipeline p(kDir + "default");
  const auto lines = ids_of(p, read_lines(kDir + "heldout/wordnet-heldout.txt", 120));
  eval::Options big, small;
  small.batch_tokens = 40;  // about one line a batch
  const eval::Report a = eval::evaluate(p, lines, big), b = eval::evaluate(p, lines, small);
  EXPECT_EQ(a.masked, b.masked);
  EXPECT_EQ(a.top1, b.top1);
  EXPECT_EQ(a.top5, b.top5);
  EXPECT_EQ(a.shuffle.preferred, b.shuffle.preferred);
  EXPECT_EQ(a.swap.preferred, b.swap.preferred);
  EXPECT_GT(a.shuffle.lines, 50);
  // And by hand, one line at a time: its masked copy alone, the ranks read off the logits.
  long masked = 0, top1 = 0, top5 = 0;
  const int V = p.config().vocab_size;
  for (size_t i = 0; i < lines.size(); ++i) {
    const eval::LinePlan plan = eval::plan(lines[i], i);
    std::vector<int32_t> x = lines[i];
    std::vector<Row> rows;
    for (int t : plan.masked) x[t] = p.mask_id(), rows.push_back({0, t});
    const auto z = p.logits({x}, rows);
    for (size_t k = 0; k < rows.size(); ++k) {
      const float* row = z.data() + k * V;
      const float truth = row[lines[i][rows[k].position]];
      int above = 0;
      for (int v = 0; v < V; ++v) above += row[v] > truth;
      ++masked, top1 += above == 0, top5 += above < 5;
    }
  }
  EXPECT_EQ(a.masked, masked);
  EXPECT_EQ(a.top1, top1);
  EXPECT_EQ(a.top5, top5);
}

TEST(EvalTrained, LinesPastALearnedTableAreLeftOutAndCounted) {
  Pipeline p(kDir + "position-learned");
  std::vector<std::vector<int32_t>> lines(3);
  for (int t = 0; t < 12; ++t) lines[0].push_back(300 + t);
  for (int t = 0; t < 33; ++t) lines[1].push_back(300 + t);  // one past the 32 rows
  for (int t = 0; t < 32; ++t) lines[2].push_back(300 + t);  // exactly the table
  const eval::Report r = eval::evaluate(p, lines);
  EXPECT_EQ(r.limit, 32);
  EXPECT_EQ(r.left_out, 1);
  EXPECT_EQ(r.evaluated, 2);
  EXPECT_EQ(r.masked, eval::masked_count(12) + eval::masked_count(32));
}

}  // namespace trained

// McNemar's exact test and the paired interval, by hand: pieces are matched by (line, position),
// and only the pieces exactly one model gets right count.
TEST(Eval, PairedTop1ByHand) {
  eval::Report a, b;
  const int ra[] = {0, 0, 1, 3, 0}, rb[] = {0, 1, 0, 0, 2};
  for (int k = 0; k < 5; ++k) a.pieces.push_back({k / 2, k, ra[k]}), b.pieces.push_back({k / 2, k, rb[k]});
  b.pieces.push_back({9, 0, 0});  // scored for b only: not paired
  eval::Paired q = eval::paired_top1(a, b);
  EXPECT_EQ(q.pieces, 5);
  EXPECT_EQ(q.both, 1);
  EXPECT_EQ(q.a_only, 2);
  EXPECT_EQ(q.b_only, 2);
  EXPECT_DOUBLE_EQ(q.difference, 0.0);
  EXPECT_DOUBLE_EQ(q.p, 1.0);  // 2·(1 + 4 + 6)/16 > 1
  eval::Report c;
  for (int k = 0; k < 5; ++k) c.pieces.push_back({k / 2, k, 7});  // c misses every piece
  for (int k = 5; k < 10; ++k) a.pieces.push_back({k / 2, k, 1}), c.pieces.push_back({k / 2, k, 1});
  q = eval::paired_top1(c, a);  // a gets 3 right that c misses, none the other way
  EXPECT_EQ(q.pieces, 10);
  EXPECT_EQ(q.a_only, 0);
  EXPECT_EQ(q.b_only, 3);
  EXPECT_NEAR(q.p, 2.0 / 8, 1e-12);  // 2·P(X = 0), X ~ Binomial(3, ½)
  EXPECT_NEAR(q.difference, 0.3, 1e-12);
  const double half = 1.96 * std::sqrt(3 - 9.0 / 10) / 10;
  EXPECT_NEAR(q.low, 0.3 - half, 1e-12);
  EXPECT_NEAR(q.high, 0.3 + half, 1e-12);
}

}  // namespace
}  // namespace ordo
