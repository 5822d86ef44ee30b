// ordo: the held-out evaluation of a masked-language model, by one fixed rule (`ordo eval`).
//
//   ordo::Pipeline pipeline("models/default");
//   std::vector<std::vector<int32_t>> lines = ...;  // each line's ids, no BOS/EOS
//   ordo::eval::Report r = ordo::eval::evaluate(pipeline, lines);
//   // r.top1 / r.masked, r.shuffle.preferred, r.buckets[0].top1 ...
//
// The rule, line by line (i = the line's 0-based index in the file, L = its number of pieces):
//   - its random numbers come from Rng(kSeed + i) (engine/init.h, SplitMix64); next() % n picks one of n;
//   - masking: k = max(1, floor(0.15·L + 0.5)) positions, the first k steps of a Fisher–Yates shuffle of
//     0..L−1 (for j < k: r = j + next() % (L − j); swap p[j], p[r]); all k become <mask> in ONE copy of the
//     line, and each is a top-1 hit when the true piece has the largest logit over the whole vocabulary
//     there, a top-5 hit when it is among the five largest;
//   - order (5 ≤ L ≤ 20), the same generator continuing: a full shuffle (for j = L−1 down to 1:
//     r = next() % (j + 1); swap p[j], p[r]), tried again while it gives back the same ids (at most 100
//     tries in all); then one adjacent swap (c = the j with ids[j] ≠ ids[j+1]; swap j = c[next() % |c|]
//     with j+1). Each text is scored by its pseudo-log-likelihood, and the natural order is preferred
//     when its score is strictly higher;
//   - hits are also counted by position bucket (0–31, 32–63, ...);
//   - a model with a learned position table cannot run a line longer than the table: such lines are
//     left out and counted, never cut short.
// tools/train/evaluate.py is the same rule in Python.
#pragma once

#include <cstdint>
#include <vector>

#include <ordo/ordo.h>

namespace ordo {

class Rng;  // engine/init.h

namespace eval {

constexpr uint64_t kSeed = 20170612;  // line i draws from Rng(kSeed + i)
constexpr int kOrderMin = 5;          // the order test takes lines of kOrderMin..kOrderMax pieces
constexpr int kOrderMax = 20;
constexpr int kShuffleTries = 100;  // a shuffle that keeps giving back the same ids is given up after this
constexpr int kBucket = 32;         // width of a position bucket

// ---- The rule, step by step -------------------------------------------------------------------
// k = max(1, floor(0.15·L + 0.5)), in integers: floor((15·L + 50) / 100) is the same number for every L.
int masked_count(int L);
// The masked positions of a line of L ≥ 1 pieces, in the order drawn (k = masked_count(L) draws).
std::vector<int> mask_positions(int L, Rng& rng);
// The ids shuffled; empty when kShuffleTries shuffles all gave back `ids` (every piece the same).
std::vector<int32_t> shuffled(const std::vector<int32_t>& ids, Rng& rng);
// The ids with one adjacent pair of different pieces swapped; empty when there is no such pair.
std::vector<int32_t> swapped(const std::vector<int32_t>& ids, Rng& rng);

// All of it for line `line` (0-based) of the file: the draws of Rng(kSeed + line), in the rule's order.
struct LinePlan {
  std::vector<int> masked;                 // positions, in the order drawn; empty for a line of no pieces
  bool order = false;                      // kOrderMin ≤ L ≤ kOrderMax: the line takes part in the order test
  std::vector<int32_t> shuffled, swapped;  // empty: left out of that comparison
};
LinePlan plan(const std::vector<int32_t>& ids, uint64_t line);

// Rank of `truth` among n logits: how many ids score higher (a tie goes to the lower id). Rank 0 is a
// top-1 hit, rank < 5 a top-5 hit.
int rank_of(const float* logits, int n, int32_t truth);

// A text's pseudo-log-likelihood from its per-piece log-probabilities, summed in ascending order of
// value: the order of summation is not part of the definition, and a fixed one makes two texts whose
// pieces score the same values (in any order) get the same sum, bit for bit.
double pll_sum(std::vector<double> log_probs);

// Two pseudo-log-likelihoods closer than float32 rounding, |a − b| ≤ kTieRelative·(|a| + |b|), are a
// tie: a pair equal in exact arithmetic (a reordering the model cannot tell from the natural order,
// such as the reversal under symmetric ALiBi) would otherwise be decided by the last bits of the
// sums, which differ from one CPU's kernels to another's.
constexpr double kTieRelative = 1e-5;
// 1: the natural order scored higher; 0: a tie, as above; −1: the reordering scored higher.
int order_verdict(double natural, double reordered);

// ---- The evaluation ---------------------------------------------------------------------------
struct Options {
  bool positions = true;    // false: run without the positional encoding (the ablation)
  bool order = true;        // the order test (pseudo-log-likelihoods: the costly part)
  int batch_tokens = 8192;  // pieces per batch of masked lines
  int max_pieces = 0;       // > 0: lines of more pieces are left out (and counted), as past a learned table
  int offset = 0;           // every line's first piece stands at this position (ordo eval --offset)
};

// One order comparison (natural against shuffled, or against one adjacent swap), over the lines tested.
struct Order {
  int lines = 0;                  // lines tested
  int preferred = 0;              // natural scored strictly higher
  int ties = 0;                   // equal scores, within float32 rounding (order_verdict)
  int other = 0;                  // the reordered text scored higher
  int left_out = 0;               // lines of kOrderMin..kOrderMax pieces with no such reordering (all pieces the same)
  double max_abs_difference = 0;  // largest |PLL(natural) − PLL(reordered)|
  // Each tested line's verdict, in line order: 1 natural higher, 0 tie, −1 reordered higher (to
  // compare two runs line by line, e.g. two compute types).
  std::vector<int> verdicts;
};

struct Bucket {
  int from = 0, to = 0;  // positions from..to (to = from + kBucket − 1)
  long masked = 0, top1 = 0, top5 = 0;
};

struct Report {
  int lines = 0;                        // lines given
  int evaluated = 0;                    // lines masked and counted
  int left_out = 0;                     // longer than the learned position table or max_pieces
  int empty = 0;                        // lines of no pieces: nothing to mask
  int limit = 0;                        // the model's learned position limit (0: none)
  int max_pieces = 0;                   // Options::max_pieces
  long masked = 0, top1 = 0, top5 = 0;  // pooled over all evaluated lines
  Order shuffle, swap;
  int order_lines = 0;          // lines of kOrderMin..kOrderMax pieces (within the limit)
  std::vector<Bucket> buckets;  // ascending, only buckets with masked pieces
  struct Piece {
    int line = 0, position = 0, rank = 0;  // rank_of the true piece there
  };
  std::vector<Piece> pieces;  // every masked piece, by line then position: for paired comparisons
};

// Two models' top-1 hits on the masked pieces both were scored on (the same lines and positions: the
// rule draws them from the line alone), compared pair by pair. McNemar's exact test: of the pieces
// exactly one model gets right, a_only went to a and b_only to b; if the two were equally good each
// such piece would be a fair coin, so p = min(1, 2·P(X ≤ min(a_only, b_only))), X ~ Binomial(a_only +
// b_only, ½). The difference in top-1 is (b_only − a_only)/n, with a 95% interval from the paired
// normal approximation: ± 1.96·√(a_only + b_only − (b_only − a_only)²/n) / n.
struct Paired {
  long pieces = 0, a_only = 0, b_only = 0, both = 0;
  double difference = 0, low = 0, high = 0;  // b's top-1 minus a's, as fractions
  double p = 1;                              // McNemar's exact two-sided p-value
};
Paired paired_top1(const Report& a, const Report& b);

// Pseudo-log-likelihoods: for each text of each set, log p(piece t | the text with piece t replaced by
// <mask>) summed over t (by pll_sum). A text of L pieces is L masked copies; the texts of one set (e.g.
// a line and its reorderings, which are compared) always run in the same batch, and many sets share a
// batch (up to about batch_tokens padded pieces). out[s][k] is text k of set s.
std::vector<std::vector<double>> pseudo_log_likelihoods(Pipeline& pipeline,
                                                        const std::vector<std::vector<std::vector<int32_t>>>& sets,
                                                        bool positions = true, int batch_tokens = 8192,
                                                        int first_position = 0);

// Runs the rule over `lines` (each line's ids, as the model's tokenizer gives them without BOS/EOS;
// index = line number). Needs a model with a head and a tokenizer with <mask> (InputError otherwise).
Report evaluate(Pipeline& pipeline, const std::vector<std::vector<int32_t>>& lines, const Options& options = {});

}  // namespace eval
}  // namespace ordo
